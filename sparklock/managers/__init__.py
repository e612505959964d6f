"""Lock managers: the port every backend implements (:mod:`.base`), the backends (one module or
package each: :mod:`.embedded`, ``zookeeper/``, ``metastore/``), and the registry that makes them
by ``spark.sparklock.manager`` (:mod:`.registry`). Only the registry imports a backend: what is
exported here is the port's."""

from __future__ import annotations

from .base import AcquisitionCancelled, HeldLocks, LockManager, Refusal
from .registry import BACKENDS, close_all, get_manager

__all__ = [
    "BACKENDS",
    "AcquisitionCancelled",
    "HeldLocks",
    "LockManager",
    "Refusal",
    "close_all",
    "get_manager",
]
