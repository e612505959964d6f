"""The JVM lease's own machinery (io.sparklock.shim.lease.Lease) in a real Spark driver: a fence
that sticks to jobs started after it, a watchdog that survives an Error, and the LOCKS_LOST of a
statement that had completed; and an UNLOCK that fences the writer whose lock it removed.

Statements are bound to the lease through the bridge with a deadline a few hundred ms ahead
and no renewal after it, which is what a stalled Python or a silenced ZooKeeper leaves the JVM
with (tests/test_lease_statements.py produces those for real); this module needs no ZooKeeper.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from sparklock.errors import LocksLostError, from_failure
from sparklock.failures import Failure
from tests.support.lease_faults import data_files, in_background, wait_until
from tests.support.nemesis import trials
from tests.support.spark import build_session

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    session = build_session("test_lease_jvm", tmp_path_factory.mktemp("lease_jvm") / "warehouse")
    session.sql(SLOW_JOB.replace("200", "0")).collect()  # warm: the first statement's setup
    yield session
    session.stop()


def lease(spark):
    return spark._jvm.io.sparklock.shim.lease.Lease


def bind(spark, seconds: float) -> str:
    """A new statement handle bound under a lease epoch of its own that lapses in ``seconds``."""
    handle = f"test-{uuid.uuid4().hex[:12]}"
    epoch = (1 << 40) + uuid.uuid4().int % (1 << 30)
    until = spark._jvm.java.lang.System.nanoTime() + int(seconds * 1e9)
    lease(spark).bind(spark.sparkContext._jsc.sc(), handle, epoch, until)
    return handle


def wait_fenced(spark, handle: str) -> None:
    wait_until(lambda: handle in lease(spark).fences(), 15, f"the watchdog fencing {handle}")


def run_tagged(spark, tag: str, sql: str) -> tuple[str, float]:
    """Runs ``sql`` with ``tag`` on this thread's jobs: ("ok" or the error text, seconds)."""
    sc = spark.sparkContext
    sc.addJobTag(tag)
    # the tasks' threads are interrupted when the job is cancelled, so the time measured is
    # the cancellation's, not that of a task finishing its batch of rows
    sc.setInterruptOnCancel(True)
    start = time.monotonic()
    try:
        spark.sql(sql).collect()
        outcome = "ok"
    except Exception as e:  # noqa: BLE001 - the outcome under test
        outcome = str(e)
    finally:
        sc.removeJobTag(tag)
        sc.setInterruptOnCancel(False)
    return outcome, time.monotonic() - start


#: 80 rows in 2 partitions, the task thread sleeping 200 ms per row: an 8 s job
SLOW_JOB_ROWS = (
    "SELECT id, reflect('java.lang.Thread', 'sleep', CAST(200 AS BIGINT)) AS s "
    "FROM range(0, 80, 1, 2)"
)
SLOW_JOB = f"SELECT s FROM ({SLOW_JOB_ROWS})"


def test_a_job_started_after_the_fence_is_cancelled(spark):
    for _ in range(trials()):
        job_after_the_fence(spark)


def job_after_the_fence(spark) -> None:
    handle = bind(spark, 0.3)
    wait_fenced(spark, handle)
    tag = spark._jvm.io.sparklock.shim.lease.FenceTags.of(handle)
    try:
        outcome, seconds = run_tagged(spark, tag, SLOW_JOB)
        assert outcome != "ok", f"a job of a fenced statement ran to its end ({seconds:.1f} s)"
        assert "cancel" in outcome.lower(), outcome
        assert seconds < 4, f"cancelled only after {seconds:.1f} s"
    finally:
        lease(spark).unbind(handle, True)
    # once the statement ended its tag is nobody's fence: a job carrying it runs
    outcome, _ = run_tagged(spark, tag, "SELECT count(*) FROM range(10)")
    assert outcome == "ok", outcome


def test_the_watchdog_survives_an_error(spark):
    keeper = bind(spark, 60)  # starts the watchdog
    try:
        lease(spark).injectWatchdogError("injected by test_the_watchdog_survives_an_error")
        time.sleep(0.3)
        assert lease(spark).watchdogAlive(), "the watchdog thread died of an Error"
        handle = bind(spark, 0.3)
        try:
            wait_fenced(spark, handle)
        finally:
            lease(spark).unbind(handle, True)
    finally:
        lease(spark).unbind(keeper, True)


def test_locks_lost_after_completion_says_committed(spark):
    """A LOCKS_LOST found at the release of a statement that completed tells a retrying caller
    that its writes are committed; any other LOCKS_LOST does not."""
    wire = spark._jvm.io.sparklock.shim.wire
    lost = wire.SparkLockException(wire.ErrorCondition.LOCKS_LOST, "the lease lapsed 5 ms ago")
    after = lease(spark).afterCompletion(lost)
    assert after.getSqlState() == "40003"
    assert dict(after.getMessageParameters()) == {"committed": "true"}

    def rebuilt(e) -> LocksLostError:
        error = from_failure(str(e.getMessage()), Failure.from_wire(str(e.failureJson())))
        assert isinstance(error, LocksLostError), error
        return error

    error = rebuilt(after)
    assert error.committed and "do not run it again" in str(error), str(error)
    assert str(error).startswith("LOCKS_LOST: the lease lapsed 5 ms ago")
    assert not rebuilt(lost).committed


def test_unlock_of_a_running_writer_fences_it_naming_who(spark):
    """Hive's rule frees the object, but the writer whose lock UNLOCK removed must not go on
    writing unprotected: its jobs are cancelled, nothing is committed, and it fails with
    LOCKS_LOST naming the UNLOCK."""
    for k in range(trials()):
        unlocked_while_writing(spark, f"unlocked{k}")


def unlocked_while_writing(spark, table: str) -> None:
    spark.sql(f"CREATE TABLE {table} (id BIGINT, s STRING) USING parquet")
    tracker = spark.sparkContext.statusTracker()
    outcome: dict[str, str] = {}

    def write() -> None:
        try:
            spark.sql(f"INSERT INTO {table} SELECT id, s FROM ({SLOW_JOB_ROWS})").collect()
            outcome["ok"] = "succeeded"
        except Exception as e:  # noqa: BLE001 - the outcome under test
            outcome["error"] = str(e)

    writer = threading.Thread(target=write)
    writer.start()
    wait_until(lambda: len(tracker.getActiveJobsIds()) > 0, 60, "the writer's job")
    spark.sql(f"UNLOCK TABLE {table}").collect()
    writer.join(60)
    assert "error" in outcome, f"the unlocked writer went on: {outcome}"
    error = outcome["error"]
    assert "LOCKS_LOST" in error and "UNLOCK TABLE" in error and table in error, error
    assert data_files(spark, table) == []
    spark.sql(f"REFRESH TABLE {table}")
    assert spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0] == 0
    assert spark.sql(f"SHOW LOCKS {table}").collect() == []


def test_an_aborted_job_leaves_another_jobs_staging_alone(spark, tmp_path):
    """A job that fails (a fenced writer's does, possibly late: after the next holder started)
    aborts while another job writes the same path. Hadoop's abort deletes ``<path>/_temporary``
    whole, the other job's staged output with it; only the aborted job's own staging may go.
    Locks are off in this session so that the two writers overlap."""
    free = spark.newSession()
    free.conf.set("spark.sparklock.enabled", "false")
    path = str(tmp_path / "shared")
    # one task of 10 s, leaving the other core to the failing job
    slow = SLOW_JOB_ROWS.replace("200", "250").replace("range(0, 80, 1, 2)", "range(0, 40, 1, 1)")
    rows = free.sql(slow)
    writer, outcome = in_background(lambda: rows.write.mode("append").parquet(path))
    wait_until(
        lambda: any((Path(path) / "_temporary").glob("*/_temporary/*")), 30, "the job staging"
    )
    failing = free.sql(
        "SELECT id, CAST(raise_error(concat('boom ', id)) AS STRING) AS s FROM range(0, 4, 1, 1)"
    )
    with pytest.raises(Exception, match="boom"):
        failing.write.mode("append").parquet(path)
    assert writer.is_alive(), f"the other job ended before the abort: {outcome}"
    writer.join(60)
    assert outcome.get("ok"), outcome
    assert free.read.parquet(path).count() == 40
