"""A v2 write's commit (Iceberg's snapshot commit) checked against the lease (docs/fencing.md),
on real Iceberg and ZooKeeper.

The module's Iceberg session reaches ZooKeeper through a proxy the test can silence (kazoo
hears nothing, the JVM's lease lapses). The statement is stopped between its write job and its
``BatchWrite.commit`` by the shim's test hold (``CheckedWrites.holdCommits``, before the lease
check): no job is left for the watchdog's cancellation to stop, so only the check at the commit
can refuse it. Without that check the held commit goes on once released and adds a snapshot.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import iceberg
from tests.support.lease_faults import (
    in_background,
    lease_conf,
    leased,
    reconnect,
    wait_until,
)
from tests.support.nemesis import trials

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper, pytest.mark.iceberg]


@pytest.fixture(scope="module")
def spark(tmp_path_factory, proxy):
    with iceberg.module_session(
        tmp_path_factory, "test_v2_write_lease", ("CREATE NAMESPACE ice.db",)
    ) as session:
        with leased(session, lease_conf(proxy, "v2_write_lease")):
            yield session


def metadata_version(spark, table: str) -> str:
    """The table's current metadata version, read from the hadoop catalog's files (no Spark, no
    lock: the partitioned session cannot lock until it reconnects)."""
    warehouse = Path(spark.conf.get(f"spark.sql.catalog.{iceberg.CATALOG}.warehouse"))
    return (warehouse / "db" / table / "metadata" / "version-hint.text").read_text().strip()


def checked_writes(spark):
    return spark._jvm.io.sparklock.shim.write.CheckedWrites


def test_writes_keep_their_interfaces_through_the_check(spark):
    """An append (``AppendDataExec``, SQL and ``writeTo``), copy-on-write
    (``ReplaceDataExec``) and merge-on-read (``WriteDeltaExec``: a ``DeltaWrite`` whose batch
    is a ``DeltaBatchWrite``) still work with the checked write."""
    mor = (
        "TBLPROPERTIES ('format-version' = '2', 'write.update.mode' = 'merge-on-read', "
        "'write.delete.mode' = 'merge-on-read')"
    )
    spark.sql(f"CREATE TABLE ice.db.rows (id INT, v INT) USING iceberg {mor}")
    spark.sql("INSERT INTO ice.db.rows VALUES (1, 10), (2, 20)")
    spark.createDataFrame([(3, 30)], "id INT, v INT").writeTo("ice.db.rows").append()
    spark.sql("UPDATE ice.db.rows SET v = v + 1 WHERE id = 1")  # merge-on-read: a delta write
    spark.sql("ALTER TABLE ice.db.rows SET TBLPROPERTIES ('write.delete.mode' = 'copy-on-write')")
    spark.sql("DELETE FROM ice.db.rows WHERE id = 2")  # copy-on-write: a replace-data write
    rows = spark.sql("SELECT id, v FROM ice.db.rows ORDER BY id").collect()
    assert [tuple(r) for r in rows] == [(1, 11), (3, 30)]
    assert spark.sql("SELECT * FROM ice.db.rows.snapshots").count() == 4  # one per write


def held_while_the_lease_lapses(spark, proxy, sql: str) -> str:
    """Run ``sql`` on a thread, hold its v2 commit once its job ended, silence ZooKeeper until
    the JVM fenced, let the commit go on; the statement's error text ("" if it succeeded).
    ZooKeeper is healed and a new session reached before it returns."""
    bridge = spark._jvm.io.sparklock.shim.SparkLockBridge
    fences_before = len(bridge.leaseFences().splitlines())
    tracker = spark.sparkContext.statusTracker()
    holds = checked_writes(spark)
    holds.holdCommits()
    writer, outcome = in_background(lambda: spark.sql(sql))
    try:
        # the job ended; the statement waits before its commit with no job left to cancel
        wait_until(
            lambda: holds.heldCommits() > 0 and not tracker.getActiveJobsIds(),
            60,
            "the statement to wait before its commit with no job running",
        )
        proxy.silence()  # kazoo hears nothing more: the JVM's lease lapses on its own
        wait_until(
            lambda: len(bridge.leaseFences().splitlines()) > fences_before, 30, "the JVM to fence"
        )
    finally:
        holds.releaseCommits()
        writer.join(60)
        proxy.heal()
        writer.join(60)
    reconnect(spark)
    return outcome.get("error", "")


def test_a_commit_under_a_lapsed_lease_is_refused_and_no_snapshot_is_added(spark, proxy):
    for k in range(trials()):
        spark.sql(f"CREATE TABLE ice.db.t{k} (batch STRING, id INT) USING iceberg")
        spark.sql(f"INSERT INTO ice.db.t{k} VALUES ('before', 0)")
        before = metadata_version(spark, f"t{k}")
        sql = f"INSERT INTO ice.db.t{k} SELECT 'A', CAST(id AS INT) FROM range(0, 4, 1, 2)"
        error = held_while_the_lease_lapses(spark, proxy, sql)
        assert "LOCKS_LOST" in error and "refused the commit of" in error, error
        assert metadata_version(spark, f"t{k}") == before, f"trial {k}: the commit was made"


def test_a_create_table_as_select_under_a_lapsed_lease_creates_nothing(spark, proxy):
    """CTAS into Iceberg (``AtomicCreateTableAsSelectExec``) writes through a nested append
    whose commit is checked; refused, Spark aborts the staged table."""
    for k in range(trials()):
        sql = f"CREATE TABLE ice.db.ctas{k} USING iceberg AS SELECT id FROM range(0, 4, 1, 2)"
        error = held_while_the_lease_lapses(spark, proxy, sql)
        assert "LOCKS_LOST" in error and "refused the commit of" in error, error
        assert not spark.catalog.tableExists(f"ice.db.ctas{k}"), f"trial {k}: CTAS created it"
