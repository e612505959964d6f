"""sparklock's errors reach PySpark code as sparklock's classes, which are PySpark's errors too.

Each error is raised for real through Spark (two sessions of one driver, a refused ZooKeeper
address): from ``spark.sql`` of an eager statement, from a DataFrame action, from LOCK/UNLOCK, from
a wait cancelled by Spark; each is a ``PySparkException`` with its condition, SQLSTATE and
parameters, its ``str()`` one paragraph without the Java stack. The condition list is the same in
Python and in the JVM.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pyspark.errors import PySparkException  # noqa: E402

import sparklock  # noqa: E402
from sparklock.errors import (  # noqa: E402
    CLASSES,
    ConfigError,
    LockConflictError,
    LockManagerUnavailableError,
    LockWaitCancelledError,
    NotLockedError,
    SparkLockError,
    from_failure,
)
from sparklock.failures import Condition, Failure, Holder  # noqa: E402
from tests.support.spark import SparkSpec  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("unlock_leftover_locks")]

SPARK = SparkSpec(
    app="errors",
    setup_sql=["CREATE TABLE t (a INT) USING parquet", "INSERT INTO t VALUES (0)"],
    #: conflicts end after 2 × 100 ms
    session_conf={
        "spark.sparklock.lock.numRetries": "2",
        "spark.sparklock.lock.retryInterval": "100ms",
    },
)


def one_paragraph(error: Exception) -> None:
    text = str(error)
    assert "\n" not in text and "\tat " not in text and "Py4J" not in text, text


@pytest.fixture
def other(spark):
    """Another session of the same driver: another lock owner."""
    s = spark.newSession()
    for key, value in SPARK.session_conf.items():
        s.conf.set(key, value)
    return s


def test_the_condition_list_is_the_same_in_python_and_the_jvm(spark):
    jvm = spark.sparkContext._jvm
    java = {
        str(c.name()): str(c.sqlState()) for c in jvm.io.sparklock.shim.wire.ErrorCondition.values()
    }
    assert java == {c.name: c.sql_state for c in Condition}
    assert set(CLASSES) <= set(java)


def test_conflict_from_spark_sql_names_the_holder(spark, other):
    spark.sql("LOCK TABLE t EXCLUSIVE")
    with pytest.raises(LockConflictError) as info:
        other.sql("INSERT INTO t VALUES (1)")
    e = info.value
    assert isinstance(e, PySparkException) and isinstance(e, SparkLockError)
    assert e.getCondition() == "LOCK_CONFLICT" and e.getSqlState() == "55P03"
    one_paragraph(e)
    assert str(e).startswith("LOCK_CONFLICT: could not acquire EXCLUSIVE lock on default@t")
    [holder] = e.holders
    assert (holder.mode, holder.object, holder.lock_type, holder.query) == (
        "EXCLUSIVE",
        "default@t",
        "EXPLICIT",
        "LOCK TABLE t EXCLUSIVE",
    )
    assert holder.user == spark.sparkContext.sparkUser() and holder.query_id
    assert abs(holder.since / 1000 - time.time()) < 60
    assert f"user={holder.user}" in str(e)
    assert (e.object_name, e.mode) == ("default@t", "EXCLUSIVE") and e.waited_s >= 0.15
    params = e.getMessageParameters()
    assert params["object"] == "default@t" and holder.query_id in params["holders"]
    assert e.java_stack.startswith("io.sparklock.shim.wire.SparkLockException: LOCK_CONFLICT")


def test_conflict_from_a_dataframe_action_and_a_lock_statement(spark, other):
    other.sql("LOCK TABLE t EXCLUSIVE")
    frame = spark.table("t")  # analysed now, locked at each action
    with pytest.raises(LockConflictError) as read:
        frame.collect()
    assert read.value.mode == "SHARED" and read.value.holders[0].mode == "EXCLUSIVE"
    with pytest.raises(LockConflictError):
        spark.sql("LOCK TABLE t SHARED")
    other.sql("UNLOCK TABLE t")
    assert frame.count() == frame.count()  # free again


def test_unlock_of_an_unlocked_table(spark):
    with pytest.raises(NotLockedError) as info:
        spark.sql("UNLOCK TABLE t")
    assert info.value.object_name == "default@t" and info.value.getSqlState() == "55000"
    assert str(info.value) == "NOT_LOCKED: Table default@t is not locked"


def test_a_wait_cancelled_by_spark(spark, other):
    other.sql("LOCK TABLE t EXCLUSIVE")
    patient = spark.newSession()
    patient.conf.set("spark.sparklock.lock.numRetries", "300")
    patient.conf.set("spark.sparklock.lock.retryInterval", "100ms")
    box: dict = {}

    def run() -> None:
        patient.sparkContext.setJobGroup("errors-cancel", "waits for t")
        try:
            patient.sql("INSERT INTO t VALUES (2)")
        except Exception as e:  # noqa: BLE001 - the test reads it
            box["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not [
        r for r in spark.sql("SHOW LOCKS t EXTENDED").collect() if r["state"] == "WAITING"
    ]:
        time.sleep(0.05)
    spark.sparkContext.cancelJobGroup("errors-cancel")
    thread.join(20)
    error = box.get("error")
    assert isinstance(error, LockWaitCancelledError), repr(error)
    assert error.getSqlState() == "57014"
    one_paragraph(error)


def test_a_bad_value_set_in_a_session(spark):
    s = spark.newSession()
    s.conf.set("spark.sparklock.lock.numRetries", "zero")
    with pytest.raises(ConfigError) as info:
        s.sql("INSERT INTO t VALUES (3)")
    e = info.value
    assert (e.key, e.value) == ("spark.sparklock.lock.numRetries", "zero")
    assert e.getCondition() == "INVALID_CONFIG" and e.getSqlState() == "22022"
    assert isinstance(e, ValueError)


@pytest.mark.zookeeper
def test_an_unreachable_lock_manager(spark):
    s = spark.newSession()
    s.conf.set("spark.sparklock.manager", "zookeeper")
    s.conf.set("spark.sparklock.zookeeper.quorum", "127.0.0.1:1")
    s.conf.set("spark.sparklock.zookeeper.connectionTimeout", "2s")
    with pytest.raises(LockManagerUnavailableError) as info:
        s.sql("INSERT INTO t VALUES (4)")
    assert info.value.getSqlState() == "08001" and "127.0.0.1:1" in str(info.value)


def test_the_java_stack_is_logged_at_debug_only(spark, other, caplog):
    other.sql("LOCK TABLE t EXCLUSIVE")
    with caplog.at_level(logging.DEBUG, logger="sparklock"):
        with pytest.raises(LockConflictError):
            spark.sql("INSERT INTO t VALUES (5)")
    assert any("SparkLockException" in r.getMessage() for r in caplog.records)


def test_an_unknown_condition_keeps_its_name():
    e = from_failure("NEW_KIND: something", Failure("NEW_KIND"))
    assert type(e) is SparkLockError and e.getCondition() == "NEW_KIND"
    assert e.getSqlState() == "XX000"
    rebuilt = from_failure(
        "LOCK_CONFLICT: x", LockConflictError("db@t", "SHARED", 1, 0.5, []).failure()
    )
    assert isinstance(rebuilt, LockConflictError) and rebuilt.holders == []
    assert Holder.from_wire({"mode": "SHARED", "object": "db", "future": 1}).object == "db"
    assert sparklock.LockConflictError is LockConflictError


def test_locks_lost_says_whether_the_statement_had_committed():
    import pickle

    from sparklock.errors import LocksLostError

    done = LocksLostError("lease lapsed after the commit", committed=True)
    assert done.committed and done.getMessageParameters() == {"committed": "true"}
    again = from_failure(str(done), done.failure())
    assert isinstance(again, LocksLostError) and again.committed
    assert pickle.loads(pickle.dumps(done)).committed
    fenced = from_failure("LOCKS_LOST: refused the job commit", Failure("LOCKS_LOST"))
    assert isinstance(fenced, LocksLostError) and not fenced.committed
    assert not LocksLostError("session expired").committed


# -- checked at start: getOrCreate() raises what the first statement would ---------------------
def _get_or_create_with(spark, conf: dict[str, str]) -> float:
    """``getOrCreate()`` of a sparklock builder carrying ``conf`` (the module's running session
    takes the values), how long it took; the values are unset again."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    builder = sparklock.configure(builder)
    start = time.monotonic()
    try:
        builder.getOrCreate()
        return time.monotonic() - start
    finally:
        for key in conf:
            spark.conf.unset(key)
        SparkSession.builder._options.clear()  # the builder is pyspark's singleton


def test_a_misspelt_key_fails_at_get_or_create(spark):
    with pytest.raises(ConfigError) as info:
        _get_or_create_with(spark, {"spark.sparklock.manger": "zookeeper"})
    assert info.value.key == "spark.sparklock.manger"
    assert info.value.hint == "did you mean spark.sparklock.manager?"
    assert "(did you mean spark.sparklock.manager?)" in str(info.value)


def test_a_bad_value_fails_at_get_or_create(spark):
    with pytest.raises(ConfigError, match="spark.sparklock.manager='zk-typo'"):
        _get_or_create_with(spark, {"spark.sparklock.manager": "zk-typo"})
    spark.sql("SELECT count(*) FROM t").collect()  # the session is fine again


#: A Python process of its own (no SparkContext yet): a refused start, then a builder without
#: the bad key.
_REFUSED_START = """
import tempfile
from pyspark import SparkContext
from pyspark.sql import SparkSession
import sparklock
from sparklock.errors import ConfigError

def builder():
    b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    return b.config("spark.sql.warehouse.dir", tempfile.mkdtemp())

try:
    sparklock.configure(builder().config("spark.sparklock.manager", "zk-typo")).getOrCreate()
    raise SystemExit("getOrCreate() accepted spark.sparklock.manager=zk-typo")
except ConfigError:
    pass
print("LEFT RUNNING", SparkContext._active_spark_context is not None)
spark = sparklock.configure(builder()).getOrCreate()
print("INHERITED", spark.conf.get("spark.sparklock.manager", None))
spark.stop()
"""


def test_a_refused_start_stops_the_context_it_started(tmp_path):
    """The check runs once the context is up: a context this ``getOrCreate`` started goes again
    with the refusal, so the next builder gets a context of its own settings, not the bad ones."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-c", _REFUSED_START]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LEFT RUNNING False" in proc.stdout and "INHERITED None" in proc.stdout, proc.stdout


@pytest.mark.zookeeper
def test_a_refused_quorum_fails_at_get_or_create_at_once(spark):
    conf = {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": "127.0.0.1:1",
    }
    start = time.monotonic()
    with pytest.raises(LockManagerUnavailableError) as info:
        _get_or_create_with(spark, conf)  # the connection timeout is 15 s
    assert time.monotonic() - start < 2.0
    text = str(info.value)
    assert "127.0.0.1:1" in text and "Connection refused" in text and "TLS" not in text
