"""The metastore backend's registry entry: its ``spark.sparklock.metastore.*`` section and its
manager (``thrift`` is imported only when one is made)."""

from __future__ import annotations

from ...values import ConfigKey
from ..backend import Backend, ManagerConfig
from ..base import LockManager
from . import settings


def _create(config: ManagerConfig) -> LockManager:
    from .manager import MetastoreLockManager

    return MetastoreLockManager(config.backend, config.lock)


BACKEND = Backend(
    name="metastore",
    summary="`metastore` (the Hive metastore's lock API, shared with Hive 3/4's DbTxnManager)",
    create=_create,
    keys=tuple(ConfigKey(key, default, doc) for key, (default, doc) in settings.KEYS.items()),
    parse=settings.MetastoreSettings.from_conf,
    shared=True,
)
