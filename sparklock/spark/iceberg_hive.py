"""Iceberg's own commit lock off where sparklock already locks the table in the same metastore.

An Iceberg ``HiveCatalog`` commits under a metastore lock of its own
(``org.apache.iceberg.hive.MetastoreLock``: an EXCLUSIVE table lock with its own lock id, taken
and released inside each commit). With ``spark.sparklock.manager=metastore`` the statement
already holds the metastore's lock on that table (SHARED or EXCLUSIVE, :mod:`sparklock.managers.
metastore.catalogs`), and the metastore knows no owners: Iceberg's request would queue behind
its own statement's lock until ``iceberg.hive.lock-timeout-ms`` (3 min) and fail the commit.

So when the session starts, each such catalog gets Iceberg's own switch
``spark.sql.catalog.<name>.hadoop.iceberg.engine.hive.lock-enabled=false`` (the catalog's
Hadoop conf), unless the user set that key or ``iceberg.engine.hive.lock-enabled`` in the
session's Hadoop conf. Iceberg then commits without its lock (``NoLock``) through the
metastore's conditional ``alter_table`` (the table's ``metadata_location`` must still be the one
the commit started from), which Hive 4 metastores enforce. It is safe because every writer that
locks in the metastore (sparklock's statements, Hive's, other engines') takes the table's
EXCLUSIVE or SHARED there and so is kept apart by sparklock's lock, and the conditional commit
still refuses a pointer moved by a writer that does not lock. A table property
``engine.hive.lock-enabled`` wins over the conf in Iceberg: a table with it ``true`` still
self-deadlocks, a metastore older than Hive 4 needs Iceberg's lock (docs/iceberg.md).
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("sparklock")

#: Iceberg's Hadoop conf switch of its metastore commit lock (``ConfigProperties``).
LOCK_ENABLED = "iceberg.engine.hive.lock-enabled"


def catalog_key(catalog: str) -> str:
    """The session conf key that puts ``LOCK_ENABLED`` into one catalog's Hadoop conf."""
    return f"spark.sql.catalog.{catalog}.hadoop.{LOCK_ENABLED}"


def commit_lock_keys(conf: dict[str, str]) -> list[str]:
    """The catalog keys to set to ``false`` for a session whose conf (as the JVM forwards it:
    ``spark.sparklock.*``, the catalogs' facts, ``hive.metastore.uris``) is ``conf``: one per
    catalog whose tables are the metastore manager's own; none for other managers."""
    from ..service import config_of

    config = config_of(conf)
    if not config.enabled or config.manager != "metastore":
        return []
    return [catalog_key(name) for name in sorted(config.backend.catalogs)]


def settle(spark: Any) -> list[str]:
    """At session start: turn Iceberg's commit lock off in each catalog that needs it (see the
    module doc), leaving a value the user chose; returns the keys set. Catalogs are made on
    first use, so a session whose catalog already ran keeps what it has."""
    from .startup import session_conf

    keys = commit_lock_keys(session_conf(spark))
    if not keys:
        return []
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    if hadoop.get(LOCK_ENABLED) is not None or spark.conf.get(f"spark.hadoop.{LOCK_ENABLED}", None):
        return []  # the user chose for every catalog
    chosen = [k for k in keys if spark.conf.get(k, None) is None]
    for key in chosen:
        spark.conf.set(key, "false")
        log.info("sparklock: %s=false (sparklock's metastore lock covers the commit)", key)
    return chosen
