"""The backends, keyed by ``spark.sparklock.manager`` (one line each), and the process-wide
manager instances made from them.

One manager per backend and section per process: every Spark session, thread and DataFrame of
the application shares it (and, for ZooKeeper, its single client connection).
"""

from __future__ import annotations

import threading

from ..errors import ConfigError
from .backend import Backend, ManagerConfig
from .base import LockManager
from .embedded import BACKEND as EMBEDDED
from .metastore.backend import BACKEND as METASTORE
from .zookeeper.backend import BACKEND as ZOOKEEPER

#: spark.sparklock.manager -> its backend, in the docs' order.
BACKENDS: dict[str, Backend] = {b.name: b for b in (EMBEDDED, ZOOKEEPER, METASTORE)}

_managers: dict[tuple, LockManager] = {}
_managers_lock = threading.Lock()


def backend(name: str) -> Backend:
    """The backend called ``name``; ConfigError naming the key when there is none."""
    found = BACKENDS.get(name)
    if found is None:
        raise ConfigError("spark.sparklock.manager", name, " or ".join(BACKENDS))
    return found


def get_manager(config: ManagerConfig) -> LockManager:
    """The process-wide manager for ``config`` (created on first use, and again once closed)."""
    key = (config.manager, config.backend)
    with _managers_lock:
        manager = _managers.get(key)
        if manager is None or manager.closed:
            manager = backend(config.manager).create(config)
            _managers[key] = manager
        return manager


def open_managers() -> list[LockManager]:
    """The managers this process made and has not closed (the Locks tab lists their locks)."""
    with _managers_lock:
        return [m for m in _managers.values() if not m.closed]


def close_all() -> None:
    """Close every manager made here (tests, interpreter exit, a server stopping)."""
    with _managers_lock:
        managers = list(_managers.values())
        _managers.clear()
    for m in managers:
        m.close()
