"""The metastore lock manager (``spark.sparklock.manager=metastore``): locks kept by the Hive
metastore's lock API, shared with Hive 3/4's ``DbTxnManager``; no ZooKeeper.

The registry imports :mod:`.backend` (its settings, no ``thrift``); the manager and its client are
imported when a manager is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .settings import MetastoreSettings

if TYPE_CHECKING:
    from .manager import MetastoreLockManager


def __getattr__(name: str):
    """``MetastoreLockManager`` on first use (it needs ``thrift``, an optional extra)."""
    if name == "MetastoreLockManager":
        from .manager import MetastoreLockManager

        return MetastoreLockManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["MetastoreLockManager", "MetastoreSettings"]
