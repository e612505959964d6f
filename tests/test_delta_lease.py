"""Delta's log commit checked against the lease (docs/fencing.md), on real Delta and ZooKeeper.

The module's Delta session reaches ZooKeeper through a proxy the test can silence (a partition:
kazoo hears nothing, the JVM's lease lapses). The refused commit is made deterministic with
Delta's own commit lock (``DeltaLog.snapshotLock``, taken by a commit when
``spark.databricks.delta.commitLock.enabled``): held by the test while the statement's write job
runs, it stops the statement between its job and its commit file, with no job left for the
watchdog's cancellation to stop, so only the check in the store can refuse the commit.
"""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.support import delta
from tests.support.lease_faults import (
    heal_and_reconnect,
    lease_conf,
    leased,
    reconnect,
    wait_until,
)
from tests.support.nemesis import trials

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper, pytest.mark.delta, delta.needs_delta]

LEASE_STORE = "io.sparklock.shim.delta.LeaseHdfsLogStore"


@pytest.fixture(scope="module")
def spark(tmp_path_factory, proxy):
    from pyspark import SparkContext

    root = tmp_path_factory.mktemp("delta_lease")
    before = delta.system_properties(SparkContext._jvm) if SparkContext._jvm else None
    session = delta.delta_session("test_delta_lease", root / "warehouse")
    conf = {**lease_conf(proxy, "delta_lease"), "spark.databricks.delta.commitLock.enabled": "true"}
    with leased(session, conf):
        yield session
    jvm = session._jvm
    session.stop()
    delta.restore_system_properties(jvm, before or dict.fromkeys(delta.system_properties(jvm)))


def delta_log(spark, table: str):
    location = spark.sql(f"DESCRIBE DETAIL {table}").collect()[0]["location"]
    return spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, location)


def version(log_dir: Path) -> int:
    """The table's version, read from its log's commit files (no Spark, no lock: the
    partitioned session has no ZooKeeper to lock with until it reconnects)."""
    return max(int(p.stem) for p in log_dir.glob("*.json") if p.stem.isdigit())


def watching(spark, table: str):
    """What a lapse test watches: the table's log directory, its version now, the JVM's lease
    bridge and how many fences it has made so far."""
    log_dir = Path(urlparse(str(delta_log(spark, table).logPath().toUri())).path)
    lease = spark._jvm.io.sparklock.shim.SparkLockBridge
    return log_dir, version(log_dir), lease, len(lease.leaseFences().splitlines())


def test_delta_writes_through_the_lease_checking_store(spark):
    assert spark.conf.get("spark.delta.logStore.file.impl") == LEASE_STORE
    spark.sql("CREATE TABLE used (id INT) USING delta")
    spark.sql("INSERT INTO used VALUES (1)")
    log = delta_log(spark, "used")
    store = log.store().getDelegate(log.logPath())  # Delta's per-scheme choice, adapted
    assert store.logStoreImpl().getClass().getName() == LEASE_STORE
    assert spark.table("used").collect()[0][0] == 1


def test_a_commit_under_a_lapsed_lease_is_refused_and_the_version_stays(spark, proxy):
    for k in range(trials()):
        refused_commit(spark, proxy, f"t{k}")


def refused_commit(spark, proxy, t: str) -> None:
    spark.sql(f"CREATE TABLE {t} (batch STRING, id INT) USING delta")
    spark.sql(f"INSERT INTO {t} VALUES ('before', 0)")
    log_dir, before, lease, fences_before = watching(spark, t)
    tracker = spark.sparkContext.statusTracker()
    outcome: dict[str, object] = {}

    def write() -> None:
        try:
            spark.sql(
                f"INSERT INTO {t} SELECT 'A', slow(CAST(id AS INT), 1.0) FROM range(0, 4, 1, 2)"
            )
            outcome["ok"] = True
        except Exception as e:  # noqa: BLE001 - the answer under test
            outcome["error"] = str(e)

    commit_lock = delta_log(spark, t).snapshotLock()
    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_until(lambda: len(tracker.getActiveJobsIds()) > 0, 60, "the write job")
        commit_lock.lock()  # this thread's JVM thread (pinned) owns it until unlock below
        try:
            # the job ends; the statement then waits for the lock, before its commit file, with
            # no job left running (so no cancellation can stop it: only the store's check)
            wait_until(
                lambda: commit_lock.hasQueuedThreads() and not tracker.getActiveJobsIds(),
                60,
                "the statement to wait for its commit with no job running",
            )
            proxy.silence()  # kazoo hears nothing more: the JVM's lease lapses on its own
            wait_until(
                lambda: len(lease.leaseFences().splitlines()) > fences_before,
                30,
                "the JVM to fence",
            )
        finally:
            commit_lock.unlock()
        writer.join(60)
    finally:
        heal_and_reconnect(spark, proxy)
        writer.join(60)
    error = str(outcome.get("error"))
    assert "LOCKS_LOST" in error and "the Delta log commit" in error, outcome
    assert version(log_dir) == before, "the refused commit became a version"


def exclusive_on(session, name: str) -> bool:
    rows = session.sql("SHOW LOCKS").collect()
    return any(r["name"] == name and r["mode"] == "EXCLUSIVE" for r in rows)


def test_a_stream_micro_batch_commit_under_a_lapsed_lease_is_refused(spark, proxy, tmp_path):
    """Delta's sink writes a micro-batch's files in a nested execution (which takes the batch's
    locks) and commits to the log afterwards, from the batch's own execution: the locks must
    still be held then, and the commit file checked against their lease as a statement's is."""
    for k in range(trials()):
        refused_micro_batch(spark, proxy, tmp_path / str(k), f"src{k}", f"sunk{k}")


def refused_micro_batch(spark, proxy, work: Path, src: str, sunk: str) -> None:
    spark.sql(f"CREATE TABLE {src} (id INT) USING delta")
    spark.sql(f"INSERT INTO {src} VALUES (1), (2), (3), (4)")
    spark.sql(f"CREATE TABLE {sunk} (batch STRING, id INT) USING delta")
    log_dir, before, lease, fences_before = watching(spark, sunk)
    tracker = spark.sparkContext.statusTracker()
    commit_lock = delta_log(spark, sunk).snapshotLock()
    stream = (
        spark.readStream.table(src)
        .selectExpr("'S' AS batch", "slow(id, 1.0) AS id")
        .writeStream.format("delta")
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(availableNow=True)
    )
    query = None
    try:
        query = stream.toTable(sunk)
        wait_until(
            lambda: (
                not query.isActive
                or (exclusive_on(spark, f"default@{sunk}") and tracker.getActiveJobsIds())
            ),
            60,
            "the batch's write job, under its lock",
        )
        assert query.isActive, f"the query ended early: {query.exception()}"
        commit_lock.lock()
        try:
            wait_until(
                lambda: commit_lock.hasQueuedThreads() and not tracker.getActiveJobsIds(),
                60,
                "the micro-batch to wait for its commit with no job running",
            )
            proxy.silence()
            wait_until(
                lambda: len(lease.leaseFences().splitlines()) > fences_before,
                30,
                "the JVM to fence",
            )
        finally:
            commit_lock.unlock()
        with pytest.raises(Exception) as failed:
            query.awaitTermination(120)
    finally:
        proxy.heal()
        if query is not None:
            query.stop()
        reconnect(spark)
    error = str(failed.value)
    assert "LOCKS_LOST" in error and "the Delta log commit" in error, error[:2000]
    assert version(log_dir) == before, "the refused micro-batch commit became a version"
