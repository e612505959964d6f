"""Lock managers: the port every backend implements (:mod:`.base`), the backends (one module or
package each: :mod:`.embedded`, ``zookeeper/``), and the registry that makes them by
``spark.sparklock.manager`` (:mod:`.registry`)."""

from __future__ import annotations

from .base import AcquisitionCancelled, HeldLocks, LockManager, Refusal
from .embedded import EmbeddedLockManager
from .registry import BACKENDS, close_all, get_manager

__all__ = [
    "BACKENDS",
    "AcquisitionCancelled",
    "EmbeddedLockManager",
    "HeldLocks",
    "LockManager",
    "Refusal",
    "close_all",
    "get_manager",
]
