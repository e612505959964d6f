"""Lock managers and the per-process registry that hands them out.

One manager per kind and connection per process: every Spark session, thread and DataFrame of the
application shares it (and, for ZooKeeper, its single client connection).
"""

from __future__ import annotations

import threading

from ..config import SparkLockConfig
from .base import AcquisitionCancelled, HeldLocks, LockManager, Refusal
from .embedded import EmbeddedLockManager

_registry: dict[tuple, LockManager] = {}
_registry_lock = threading.Lock()


def get_manager(config: SparkLockConfig) -> LockManager:
    """The process-wide manager for ``config`` (created on first use, and again once closed)."""
    key = config.settings_key()
    with _registry_lock:
        manager = _registry.get(key)
        if manager is None or manager.closed:
            manager = _create(config)
            _registry[key] = manager
        return manager


def _create(config: SparkLockConfig) -> LockManager:
    if config.manager == "embedded":
        return EmbeddedLockManager(config.lock)
    from .zookeeper import ZooKeeperLockManager  # kazoo only when asked for

    return ZooKeeperLockManager(config)


def close_all() -> None:
    """Close every registered manager (tests, interpreter exit)."""
    with _registry_lock:
        managers = list(_registry.values())
        _registry.clear()
    for m in managers:
        m.close()


__all__ = [
    "AcquisitionCancelled",
    "EmbeddedLockManager",
    "HeldLocks",
    "LockManager",
    "Refusal",
    "close_all",
    "get_manager",
]
