"""What crashed or interrupted clients leave in the lock tree, removed on the operator's word
(``sparklock stale --apply``): object nodes with no lock below them."""

from __future__ import annotations

from collections.abc import Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NotEmptyError

from ..layout import deepest_first


def remove_empty(client: KazooClient, root: str, paths: Iterable[str]) -> list[str]:
    """Delete each of ``paths`` still empty, deepest first; what was removed. A node in use
    meanwhile is kept (ZooKeeper refuses to delete it), and nothing outside ``root`` is touched."""
    removed = []
    for path in deepest_first(paths):
        if path == root or not path.startswith(root + "/"):
            continue  # never outside the namespace
        try:
            client.delete(path)
            removed.append(path)
        except (NoNodeError, NotEmptyError):
            pass
    return removed
