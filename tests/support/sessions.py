"""Extra Spark sessions for tests that watch one session from another (waiting, re-listing).

Sessions of one application share the driver's lock service but each reads its own
``spark.sparklock.*`` conf; the tests parametrized over both lock managers make their sessions
the same way, so they make them here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from tests.support.spark import zookeeper_conf

if TYPE_CHECKING:  # pyspark only where a module builds a session
    from pyspark.sql import SparkSession


def new_session(spark: SparkSession, conf: Mapping[str, str]) -> SparkSession:
    """A new session of ``spark``'s application with ``conf`` set on it."""
    session = spark.newSession()
    for key, value in conf.items():
        session.conf.set(key, value)
    return session


def conf_for_manager(kind: str, zk_address: Callable[[], str], prefix: str) -> dict[str, str]:
    """Session conf for the lock manager ``kind`` (``embedded`` or ``zookeeper``); ZooKeeper gets
    a fresh namespace starting ``prefix``. The address is asked for only for ZooKeeper, so an
    embedded run starts no server."""
    if kind == "embedded":
        return {"spark.sparklock.manager": "embedded"}
    return zookeeper_conf(zk_address(), f"{prefix}{uuid.uuid4().hex[:8]}")
