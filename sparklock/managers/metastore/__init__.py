"""The metastore lock manager (``spark.sparklock.manager=metastore``): locks kept by the Hive
metastore's lock API, shared with Hive 3/4's ``DbTxnManager``; no ZooKeeper."""

from __future__ import annotations

from .manager import MetastoreLockManager
from .settings import MetastoreSettings

__all__ = ["MetastoreLockManager", "MetastoreSettings"]
