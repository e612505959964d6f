"""Re-listing only what a writer changed (README "What a read reads"), in real Spark.

After a grant the JVM lists again only the partition directories (or file indexes) whose write
epoch differs from the one under which sparklock last listed them. What it did is counted by the
JVM (``ShimProbes.listingStats()``: indexes refreshed whole, directories listed, listings
found fresh), so each test checks both what the read returns and what it cost. Every test runs
on the embedded manager and on ZooKeeper; a foreign writer (Hive's lock manager, files replaced
under its lock) on ZooKeeper only.
"""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from pathlib import Path

import pytest

import sparklock  # noqa: E402
from tests.support.hive_harness import HiveLockHarness, build_harness, missing_requirements  # noqa: E402
from tests.support.sessions import conf_for_manager, new_session  # noqa: E402
from tests.support.spark import SparkSpec, zookeeper_conf  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("unlock_leftover_locks")]

BUDGET = {"spark.sparklock.lock.numRetries": "300", "spark.sparklock.lock.retryInterval": "200ms"}
SPARK = SparkSpec(app="relisting", conf=BUDGET)


def stats(spark) -> dict[str, int]:
    text = spark.sparkContext._jvm.io.sparklock.shim.ShimProbes.listingStats()
    return {k: int(v) for k, v in (part.split("=") for part in text.split())}


def since(spark, before: dict[str, int]) -> dict[str, int]:
    now = stats(spark)
    return {k: now[k] - before[k] for k in now}


def drop_time(delta: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in delta.items() if k != "micros"}


def reading(session, sql: str) -> tuple[threading.Thread, dict]:
    """A thread (not started) that reads ``sql`` on ``session``, for a read that must wait for a
    writer; the dict gets its ``rows`` or its ``error``, for the test to check after the join."""
    outcome: dict = {}

    def read() -> None:
        try:
            outcome["rows"] = rows(session, sql)
        except Exception as e:  # noqa: BLE001 - reported to the test
            outcome["error"] = e

    return threading.Thread(target=read, daemon=True), outcome


@pytest.fixture(params=["embedded", "zookeeper"])
def manager_conf(request) -> dict[str, str]:
    zk_address = lambda: request.getfixturevalue("zk_server").address  # noqa: E731
    return conf_for_manager(request.param, zk_address, "relist_")


@pytest.fixture
def sessions(spark, manager_conf):
    """A reader and a writer: two sessions of the application, on the manager under test."""
    conf = {**BUDGET, **manager_conf}
    return new_session(spark, conf), new_session(spark, conf)


@pytest.fixture
def table(spark, manager_conf) -> str:
    """A catalog-partitioned parquet table of four partitions, p=1..4 holding v = p."""
    name = f"rl_{uuid.uuid4().hex[:8]}"
    spark.conf.set("spark.sparklock.enabled", "false")
    try:
        spark.sql(f"CREATE TABLE {name} (v INT, p INT) USING parquet PARTITIONED BY (p)")
        spark.sql(f"INSERT INTO {name} SELECT id, id FROM range(1, 5)")
    finally:
        spark.conf.unset("spark.sparklock.enabled")
    return name


def rows(session, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in session.sql(sql).collect())


def test_reads_relist_nothing_no_writer_touched(spark, sessions, table):
    reader, _ = sessions
    assert rows(reader, f"SELECT p, v FROM {table}") == [(1, 1), (2, 2), (3, 3), (4, 4)]
    before = stats(spark)
    for sql in (f"SELECT p, v FROM {table}", f"SELECT v FROM {table} WHERE p = 3"):
        reader.sql(sql).collect()
    assert drop_time(since(spark, before)) == {"whole": 0, "paths": 0, "fresh": 5}

    reader.sql(f"CREATE TABLE {table}_flat (k INT) USING parquet")
    reader.sql(f"INSERT INTO {table}_flat VALUES (1)")
    reader.sql(f"SELECT * FROM {table}_flat").collect()
    before = stats(spark)
    assert rows(reader, f"SELECT * FROM {table}_flat") == [(1,)]
    assert drop_time(since(spark, before)) == {"whole": 0, "paths": 0, "fresh": 1}


def test_repeated_pruned_reads_list_their_partition_once(spark, sessions, table):
    """Each planning of a pruned read builds a new pruned index (from the session's file status
    cache): the ledger knows the cache entry it put there, so only the first read of the
    partition lists it (benchmark 4's pruned read, issue 11)."""
    reader, _ = sessions
    sql = f"SELECT v FROM {table} WHERE p = 2"
    before = stats(spark)
    assert rows(reader, sql) == [(2,)]  # Spark's own listing, age unknown: listed again
    assert drop_time(since(spark, before)) == {"whole": 0, "paths": 1, "fresh": 0}
    before = stats(spark)
    for _ in range(5):
        assert rows(reader, sql) == [(2,)]
    assert drop_time(since(spark, before)) == {"whole": 0, "paths": 0, "fresh": 5}


def test_a_read_after_a_partition_write_relists_that_partition(spark, sessions, table):
    reader, writer = sessions
    reader.sql(f"SELECT * FROM {table}").collect()
    writer.sql(f"INSERT OVERWRITE TABLE {table} PARTITION (p = 2) VALUES (20)")
    before = stats(spark)
    assert rows(reader, f"SELECT p, v FROM {table}") == [(1, 1), (2, 20), (3, 3), (4, 4)]
    assert drop_time(since(spark, before)) == {"whole": 0, "paths": 1, "fresh": 3}

    # a pruned read planned before the write: its own index is rebuilt with the new listing
    frame = reader.table(table).where("p = 3")
    writer.sql(f"INSERT OVERWRITE TABLE {table} PARTITION (p = 3) VALUES (30)")
    before = stats(spark)
    assert [tuple(r) for r in frame.collect()] == [(30, 3)]
    assert drop_time(since(spark, before)) == {"whole": 0, "paths": 1, "fresh": 0}


def test_a_read_that_waited_relists_only_what_the_writer_locked(spark, sessions, table):
    """The stale-read scenario: planned (listing cached) before the write, granted after it."""
    reader, writer = sessions
    sql = f"SELECT p, v FROM {table}"
    reader.sql(sql).collect()
    writer.sql(f"LOCK TABLE {table} PARTITION (p = 2) EXCLUSIVE")
    thread, outcome = reading(reader, sql)
    service = sparklock.service.get_service()
    try:
        before = stats(spark)
        thread.start()
        deadline = time.monotonic() + 30
        while service.waiting() == 0 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert service.waiting() == 1, "the read never waited for the writer"
        writer.sql(f"INSERT OVERWRITE TABLE {table} PARTITION (p = 2) VALUES (22)")
    finally:
        writer.sql(f"UNLOCK TABLE {table} PARTITION (p = 2)")
    thread.join(60)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["rows"] == [(1, 1), (2, 22), (3, 3), (4, 4)]
    assert drop_time(since(spark, before)) == {"whole": 0, "paths": 1, "fresh": 3}


@pytest.fixture(scope="module")
def hive_build():
    reason = missing_requirements()
    if reason:
        pytest.skip(f"Hive's lock manager cannot run here: {reason}")
    return build_harness()


def test_a_foreign_writer_on_zookeeper_is_seen(spark, zk_server, hive_build, warehouse):
    """Hive's lock manager holds the partition while its files are replaced (as a Hive INSERT
    OVERWRITE would); sparklock's clock sees the foreign writes and the read lists again."""
    namespace = f"relist_hive_{uuid.uuid4().hex[:8]}"
    conf = {**BUDGET, **zookeeper_conf(zk_server.address, namespace)}
    reader = new_session(spark, conf)
    name = f"rh_{uuid.uuid4().hex[:8]}"
    reader.sql(f"CREATE TABLE {name} (v INT, p INT) USING parquet PARTITIONED BY (p)")
    reader.sql(f"INSERT INTO {name} SELECT id, id FROM range(1, 5)")
    reader.sql(f"CREATE TABLE {name}_new (v INT) USING parquet")
    reader.sql(f"INSERT INTO {name}_new VALUES (200)")
    sql = f"SELECT p, v FROM {name}"
    assert rows(reader, sql) == [(1, 1), (2, 2), (3, 3), (4, 4)]
    partition = Path(warehouse) / name / "p=2"
    with HiveLockHarness(zk_server.address, namespace, build_dir=hive_build) as hive:
        hive.query("hive_insert_overwrite", f"INSERT OVERWRITE TABLE {name} PARTITION (p=2) ...")
        answer = hive.lockset(
            {"default": "SHARED", f"default@{name}": "SHARED", f"default@{name}@p=2": "EXCLUSIVE"}
        )
        assert answer.granted
        thread, outcome = reading(reader, sql)
        thread.start()
        time.sleep(1.0)
        assert thread.is_alive(), outcome  # waits for Hive's writer
        for old in partition.glob("*.parquet"):
            old.unlink()
        for new in (Path(warehouse) / f"{name}_new").glob("*.parquet"):
            shutil.copy(new, partition / new.name)
        hive.release(answer)
        thread.join(60)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["rows"] == [(1, 1), (2, 200), (3, 3), (4, 4)]


def test_refresh_listing_all_relists_every_index_and_false_none(spark, sessions, table):
    reader, _ = sessions
    reader.sql(f"SELECT * FROM {table}").collect()
    reader.conf.set("spark.sparklock.read.refreshListing", "all")
    before = stats(spark)
    reader.sql(f"SELECT * FROM {table}").collect()
    assert drop_time(since(spark, before)) == {"whole": 1, "paths": 0, "fresh": 0}
    reader.conf.set("spark.sparklock.read.refreshListing", "false")
    before = stats(spark)
    reader.sql(f"SELECT * FROM {table}").collect()
    assert drop_time(since(spark, before)) == {"whole": 0, "paths": 0, "fresh": 0}
