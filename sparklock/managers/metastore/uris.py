"""Metastore URIs as Hive writes ``hive.metastore.uris`` (``thrift://host:port``, listed)."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlparse

DEFAULT_PORT = 9083  # Hive's metastore port


def parse_uris(uris: str | Sequence[str]) -> list[tuple[str, int]]:
    """``thrift://host:port[,thrift://host2:port]`` as Hive writes ``hive.metastore.uris``."""
    items = uris.split(",") if isinstance(uris, str) else list(uris)
    out: list[tuple[str, int]] = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        parsed = urlparse(item if "://" in item else f"thrift://{item}")
        if parsed.scheme != "thrift" or not parsed.hostname:
            raise ValueError(f"not a metastore URI (thrift://host:port): {item!r}")
        out.append((parsed.hostname, parsed.port or DEFAULT_PORT))
    if not out:
        raise ValueError("no metastore URI given")
    return out
