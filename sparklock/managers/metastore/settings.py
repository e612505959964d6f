"""``spark.sparklock.metastore.*``: where the metastore is and how its locks are kept alive
(no Thrift here: the registry reads these for every conf, the client is imported only when a
metastore manager is made)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ...errors import ConfigError
from ...values import DURATION_ACCEPTS, parse_duration
from .catalogs import metastore_catalogs
from .uris import parse_uris

PREFIX = "spark.sparklock.metastore."
URIS = PREFIX + "uris"
SOCKET_TIMEOUT = PREFIX + "socketTimeout"
TXN_TIMEOUT = PREFIX + "txnTimeout"
HEARTBEAT_INTERVAL = PREFIX + "heartbeatInterval"
LEASE_MARGIN = PREFIX + "leaseMargin"
CHECK_INTERVAL = PREFIX + "checkInterval"

#: key → (default, what it means); "" means "derived" (see the text)
KEYS: dict[str, tuple[str, str]] = {
    URIS: (
        "",
        "Metastore URIs (thrift://host:port, comma-separated, tried in order). Default: the "
        "session's own hive.metastore.uris (spark.hadoop.hive.metastore.uris).",
    ),
    SOCKET_TIMEOUT: ("20s", "Timeout of one metastore call (connect, send, answer)."),
    TXN_TIMEOUT: (
        "",
        "The metastore's lock timeout (metastore.txn.timeout). Default: asked from the "
        "metastore (get_config_value) on first use; set it where that call is not allowed.",
    ),
    HEARTBEAT_INTERVAL: ("", "How often held locks are heartbeated. Default: txnTimeout / 3."),
    LEASE_MARGIN: (
        "",
        "How long before the metastore could expire unheartbeated locks a statement fences "
        "itself (the driver's JVM too, on its own). Default: txnTimeout / 10, at least 1s. "
        "Must be at least txnTimeout / 10 and below txnTimeout - heartbeatInterval.",
    ),
    CHECK_INTERVAL: (
        "250ms",
        "Longest pause between check_lock calls of a queued request (starts at 20ms, doubles).",
    ),
}
# Where a Spark session keeps its metastore URIs (Hadoop conf keys travel as spark.hadoop.*).
SESSION_URI_KEYS = ("spark.hadoop.hive.metastore.uris", "hive.metastore.uris")


@dataclass(frozen=True)
class MetastoreSettings:
    uris: str = ""
    socket_timeout: float = 20.0
    txn_timeout: float | None = None
    heartbeat_interval: float | None = None
    lease_margin: float | None = None
    check_interval: float = 0.25
    #: catalogs whose tables are this metastore's (:mod:`.catalogs`)
    catalogs: frozenset[str] = frozenset()

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> MetastoreSettings:
        """Parsed and validated; the URIs are required only when the manager is built."""
        uris = str(conf.get(URIS, "") or "").strip()
        session_uris = next((str(conf[k]).strip() for k in SESSION_URI_KEYS if conf.get(k)), "")
        uris = uris or session_uris
        if uris:
            try:
                parse_uris(uris)
            except ValueError as e:
                expected = f"thrift://host:port[,thrift://host:port] ({e})"
                raise ConfigError(URIS, uris, expected) from e

        def duration(key: str, *, optional: bool) -> float | None:
            raw = str(conf.get(key, KEYS[key][0]) or "").strip()
            if not raw and optional:
                return None
            seconds = parse_duration(key, raw)
            if seconds <= 0:
                raise ConfigError(key, raw, DURATION_ACCEPTS + ", greater than 0")
            return seconds

        settings = cls(
            uris=uris,
            socket_timeout=duration(SOCKET_TIMEOUT, optional=False) or 20.0,
            txn_timeout=duration(TXN_TIMEOUT, optional=True),
            heartbeat_interval=duration(HEARTBEAT_INTERVAL, optional=True),
            lease_margin=duration(LEASE_MARGIN, optional=True),
            check_interval=duration(CHECK_INTERVAL, optional=False) or 0.25,
            catalogs=metastore_catalogs(conf, uris, session_uris),
        )
        if settings.txn_timeout is not None:
            settings.timing(settings.txn_timeout)
        return settings

    def timing(self, txn_timeout: float) -> tuple[float, float]:
        """``(heartbeat interval, lease margin)`` under the metastore's ``txn_timeout``, checked:
        the margin is all the time the JVM has to fence (its watchdog's wake-up, cancelling the
        jobs, a commit already past its check) before the metastore could expire the locks, so
        it has a floor that scales with the timeout; and it must leave the lease running past
        the next heartbeat of a healthy connection, or every statement would be fenced."""
        interval = self.heartbeat_interval or txn_timeout / 3
        margin = self.lease_margin if self.lease_margin is not None else max(1.0, txn_timeout / 10)
        floor, ceiling = txn_timeout / 10, txn_timeout - interval
        if not floor <= margin < ceiling:
            key = LEASE_MARGIN if self.lease_margin is not None else HEARTBEAT_INTERVAL
            value = self.lease_margin if self.lease_margin is not None else interval
            raise ConfigError(
                key,
                f"{value:g}s",
                f"a lease margin (now {margin:g}s) of at least txnTimeout/10 ({floor:g}s) and "
                f"below txnTimeout - heartbeatInterval ({ceiling:g}s), with the metastore's "
                f"txnTimeout {txn_timeout:g}s",
                checked=True,
            )
        return interval, margin


_HIVE_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_UNITS = {
    "": 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "ms": 0.001, "msec": 0.001, "msecs": 0.001, "millis": 0.001, "milliseconds": 0.001,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0, "d": 86400.0, "day": 86400.0, "days": 86400.0,
}  # fmt: skip


def parse_hive_time(value: str) -> float:
    """A Hive time value as ``metastore.txn.timeout`` holds it (``300s``, ``300``, ``5min``)."""
    m = _HIVE_TIME.match(value or "")
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a Hive time value: {value!r}")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]
