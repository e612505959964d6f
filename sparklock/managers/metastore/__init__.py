"""The metastore lock manager (``spark.sparklock.manager=metastore``): locks kept by the Hive
metastore's lock API, shared with Hive 3/4's ``DbTxnManager``; no ZooKeeper.

The manager (and ``thrift``, an optional dependency) is imported on first use only: the
registry reads this backend's settings for every conf.
"""

from __future__ import annotations

from typing import Any

from .settings import MetastoreSettings

__all__ = ["MetastoreLockManager", "MetastoreSettings"]


def __getattr__(name: str) -> Any:
    if name == "MetastoreLockManager":
        from .manager import MetastoreLockManager

        return MetastoreLockManager
    raise AttributeError(name)
