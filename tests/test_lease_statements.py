"""Which statements the JVM's lease fences (docs/fencing.md), in one driver on a real ZooKeeper.

The module's session reaches ZooKeeper through a proxy the test silences (a partition that
closes nothing: kazoo learns only from its read timeout, and the JVM's lease lapses on its own);
each test heals it and waits until the session locks again.
"""

from __future__ import annotations

import time

import pytest

from tests.support.lease_faults import (
    data_files,
    heal_and_reconnect,
    in_background,
    lease_conf,
    leased,
    wait_until,
)
from tests.support.nemesis import trials
from tests.support.spark import build_session

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper]


@pytest.fixture(scope="module")
def spark(tmp_path_factory, proxy):
    warehouse = tmp_path_factory.mktemp("lease_statements") / "warehouse"
    session = build_session("test_lease_statements", warehouse)
    with leased(session, lease_conf(proxy, "lease_stmt")):
        yield session
    session.stop()


def fenced_during(spark, proxy, sql: str) -> str:
    """Run ``sql`` on a thread; once its job runs, silence ZooKeeper; the statement's error text
    (an AssertionError if it succeeded). The job must outlast the lease by far (12 s of tasks
    here against a lapse within 3 s of the silence): a job commit that passed its check before
    the lapse is the window docs/fencing.md states, not what this checks."""
    tracker = spark.sparkContext.statusTracker()
    writer, outcome = in_background(lambda: spark.sql(sql).collect())
    try:
        wait_until(lambda: len(tracker.getActiveJobsIds()) > 0, 60, "the statement's job")
        proxy.silence()
        writer.join(60)
    finally:
        heal_and_reconnect(spark, proxy)
        writer.join(60)
    assert "error" in outcome, f"{sql!r} was not fenced: {outcome}"
    return outcome["error"]


def test_a_statement_under_an_explicit_lock_is_fenced(spark, proxy):
    """LOCK TABLE's lock outlives the ZooKeeper session (a persistent node), but the INSERT run
    under it is bound to the lease like any statement: it must not write unfenced."""
    for k in range(trials()):
        spark.sql(f"CREATE TABLE e{k} (id INT) USING parquet")
        spark.sql(f"LOCK TABLE e{k} EXCLUSIVE")
        try:
            insert = f"INSERT INTO e{k} SELECT slow(CAST(id AS INT), 1.0) FROM range(0, 24, 1, 2)"
            error = fenced_during(spark, proxy, insert)
            assert "LOCKS_LOST" in error, f"trial {k}: {error}"
            assert data_files(spark, f"e{k}") == [], f"trial {k}"
        finally:
            spark.sql(f"UNLOCK TABLE e{k}")


def test_a_create_table_as_select_fenced_in_its_job_leaves_no_table(spark, proxy):
    """The catalog change of a CTAS comes after its write job: fenced there, it never happens."""
    for k in range(trials()):
        error = fenced_during(
            spark,
            proxy,
            f"CREATE TABLE c{k} USING parquet AS "
            "SELECT slow(CAST(id AS INT), 1.0) AS id FROM range(0, 24, 1, 2)",
        )
        assert "LOCKS_LOST" in error, f"trial {k}: {error}"
        assert not spark.catalog.tableExists(f"c{k}"), f"trial {k}"


def test_a_writer_whose_lock_another_client_removed_is_fenced(spark, zk_server):
    """An UNLOCK of another driver (a plain ZooKeeper client deleting the writer's lock node, as
    ``python -m sparklock release`` or Hive would) while the writer's job runs: the JVM fences it
    at once (its lease was healthy), its job is cancelled, nothing of it is written."""
    for k in range(trials()):
        removed_elsewhere(spark, zk_server, f"r{k}")


def removed_elsewhere(spark, zk_server, table: str) -> None:
    from tests.support.zk_tree import inspecting, znodes

    spark.sql(f"CREATE TABLE {table} (id INT) USING parquet")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    before = data_files(spark, table)
    bridge = spark.sparkContext._jvm.io.sparklock.shim.SparkLockBridge
    fences_before = len(bridge.leaseFences().splitlines())
    root = "/" + spark.conf.get("spark.sparklock.zookeeper.namespace")
    tracker = spark.sparkContext.statusTracker()
    slow = f"INSERT INTO {table} SELECT slow(CAST(id AS INT), 1.0) FROM range(0, 24, 1, 2)"
    writer, outcome = in_background(lambda: spark.sql(slow).collect())
    with inspecting(zk_server.address) as other:
        wait_until(lambda: len(tracker.getActiveJobsIds()) > 0, 60, "the statement's job")
        exclusive = [
            p for p in znodes(other, root, locks_only=True) if "EXCLUSIVE" in p and table in p
        ]
        assert exclusive, znodes(other, root, locks_only=True)
        for path in exclusive:
            other.delete(path)
        started = time.monotonic()
        writer.join(60)
    assert "error" in outcome, f"the writer was not fenced: {outcome}"
    assert "LOCKS_LOST" in outcome["error"], outcome["error"]
    assert "removed by another client" in outcome["error"], outcome["error"]
    assert time.monotonic() - started < 10  # cancelled, not left to run its 12 s of tasks
    assert len(bridge.leaseFences().splitlines()) > fences_before
    assert data_files(spark, table) == before
