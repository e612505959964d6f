"""Spark drivers on a real Hive 4.0.1 metastore: ``spark.sparklock.manager=metastore`` end to end.

Two driver processes (``tests.support.driver``) share the metastore as their catalog (Spark's
Hive 4 client, ``tests.support.hive_client``) and as their lock manager (its URIs default to the
session's ``hive.metastore.uris``); Hive's own metastore client (the harness of
``test_metastore_interop``) watches ``show_locks`` and plays a Hive writer. Scenarios: a
statement's implicit locks as SHOW LOCKS and Hive list them, LOCK/UNLOCK TABLE, a conflict and a
wait across the two processes, a 1,000-partition read, and a killed driver's locks expiring
after ``metastore.txn.timeout`` (10 s here). The tables live in database ``msk``, so Hive's
listing is filtered to it.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import hive_client
from tests.support.driver import Driver
from tests.support.locks import wait_for
from tests.support.metastore_harness import MetastoreLockHarness
from tests.support.show_locks_columns import EXTENDED

pytestmark = pytest.mark.metastore

DB = "msk"
WIDE = 1000
#: queue for up to 30 s (the waits below end well before)
PATIENT = {"spark.sparklock.lock.numRetries": "300", "spark.sparklock.lock.retryInterval": "100ms"}
#: LOCK_CONFLICT after ~0.5 s
SHORT = {"spark.sparklock.lock.numRetries": "5", "spark.sparklock.lock.retryInterval": "100ms"}


@pytest.fixture(scope="module")
def drivers(hive_metastore, tmp_path_factory):
    """Drivers ``a`` and ``b`` on the metastore, and the module's tables (made by ``a``, seen
    by ``b`` through the shared catalog)."""
    reason = hive_client.missing_requirements()
    if reason:
        pytest.skip(f"drivers cannot share the Hive 4 metastore as their catalog: {reason}")
    conf = {
        **hive_client.catalog_conf(hive_metastore.uri),
        "spark.sparklock.manager": "metastore",
        # a 1,000-partition table is listed by the driver, not by a Spark job per read
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
        **PATIENT,
    }
    warehouses = [str(tmp_path_factory.mktemp(f"metastore-driver-{n}")) for n in "ab"]
    with ThreadPoolExecutor(2) as pool:  # two JVMs starting side by side
        futures = [pool.submit(Driver, None, None, w, conf=conf, start_timeout=300)
                   for w in warehouses]  # fmt: skip
    started = [f.result() for f in futures if f.exception() is None]
    try:
        a, b = [f.result() for f in futures]  # a driver that did not start fails the module
        # b's Hive client starts (its first catalog call) while a makes the tables
        assert b.send({"op": "bg", "sql": "SHOW TABLES IN default"})["started"]
        for sql in (
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.a (k INT) USING parquet",
            f"CREATE TABLE {DB}.b (k INT) USING parquet",
            f"CREATE TABLE {DB}.pt (v INT, p STRING) USING parquet PARTITIONED BY (p)",
            f"CREATE TABLE {DB}.wide (v INT, p INT) USING parquet PARTITIONED BY (p)",
            f"INSERT INTO {DB}.a VALUES (1), (2), (3), (4)",
            f"INSERT INTO {DB}.b VALUES (1)",
            f"INSERT INTO {DB}.pt VALUES (1, '1'), (2, '2')",
            # 1,000 partitions in one metastore call; rows in p=0 only (the read's slow row)
            f"ALTER TABLE {DB}.wide ADD " + " ".join(f"PARTITION (p={i})" for i in range(1, WIDE)),
            f"INSERT INTO {DB}.wide PARTITION (p=0) VALUES (0)",
        ):
            ok(a, sql)
        yield a, b
    finally:
        for d in started:
            d.close()


@pytest.fixture(autouse=True)
def unlock_leftovers(hive_metastore):
    """Safety net: whatever a failed test left in the module's database is unlocked (the tests
    check their own locks; this keeps one failure from failing the next tests)."""
    yield
    from sparklock.errors import SparkLockError
    from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings

    manager = MetastoreLockManager(MetastoreSettings(uris=hive_metastore.uri))
    try:
        for obj in {i.obj for i in manager.list_locks() if i.obj.database == DB}:
            try:
                manager.unlock(obj)
            except SparkLockError:
                pass  # waiting only, or a Hive transaction's: goes with its owner
    finally:
        manager.close()


@pytest.fixture(scope="module")
def hive(hive_metastore):
    with MetastoreLockHarness(hive_metastore.uri) as harness:
        yield harness


def ok(driver: Driver, sql: str, timeout: float = 120.0) -> list:
    return driver.ok(sql, timeout)


def fails(driver: Driver, sql: str) -> str:
    answer = driver.sql(sql)
    assert not answer["ok"], f"{sql} did not fail"
    return answer["error"]


def configure(driver: Driver, conf: dict[str, str]) -> None:
    for key, value in conf.items():
        ok(driver, f"SET {key}={value}")


def show_extended(driver: Driver, target: str = "") -> list[dict[str, str]]:
    rows = ok(driver, f"SHOW LOCKS {target} EXTENDED".replace("  ", " "))
    return [dict(zip(EXTENDED, r, strict=True)) for r in rows]


def hive_rows(hive: MetastoreLockHarness) -> list:
    """Hive's ``show_locks`` rows of the module's database."""
    return [r for r in hive.show() if r.db == DB]


def test_a_statement_s_locks_are_listed_by_both_drivers_and_by_hive(drivers, hive):
    a, b = drivers
    sql = f"INSERT INTO {DB}.pt PARTITION (p='3') SELECT slow(k, 1.5) FROM {DB}.a"
    assert a.send({"op": "bg", "sql": sql})["started"]
    assert wait_for(lambda: show_extended(b), 60, 0.1)
    rows = show_extended(b)
    mine = {r["query_id"] for r in rows}
    assert len(mine) == 1
    # the metastore's hierarchy: no msk@pt SHARED above the partition (module doc of mapping)
    assert sorted((r["name"], r["mode"], r["state"]) for r in rows) == [
        (DB, "SHARED", "ACQUIRED"),
        (f"{DB}@a", "SHARED", "ACQUIRED"),
        (f"{DB}@pt@_sparklock_writers", "EXCLUSIVE", "ACQUIRED"),
        (f"{DB}@pt@p=3", "EXCLUSIVE", "ACQUIRED"),
    ]
    seen = hive_rows(hive)
    assert {(r.table, r.partition, r.type, r.state) for r in seen} == {
        (None, None, "SHARED_READ", "ACQUIRED"),
        ("a", None, "SHARED_READ", "ACQUIRED"),
        ("pt", "_sparklock_facet=writers", "EXCLUSIVE", "ACQUIRED"),
        ("pt", "p=3", "EXCLUSIVE", "ACQUIRED"),
    }
    # Hive's agent info: the query id, then the owning session, the lock type, the app
    assert {r.agent.split(":")[0] for r in seen} == mine and len({r.lockid for r in seen}) == 1
    assert ":s=" in seen[0].agent and ":l=I" in seen[0].agent
    assert wait_for(lambda: not hive_rows(hive), 60, 0.1)
    assert show_extended(b) == []
    # b reads what a wrote: one catalog
    assert ok(b, f"SELECT count(*) FROM {DB}.pt WHERE p = '3'") == [[4]]


def test_lock_and_unlock_table_across_drivers(drivers, hive):
    a, b = drivers
    ok(a, f"LOCK TABLE {DB}.a EXCLUSIVE")
    [row] = show_extended(b)
    assert (row["name"], row["mode"], row["state"]) == (f"{DB}@a", "EXCLUSIVE", "ACQUIRED")
    [mine] = show_extended(a)  # only the taking process knows its lock's type and text
    assert (mine["lock_type"], mine["query_string"]) == ("EXPLICIT", f"LOCK TABLE {DB}.a EXCLUSIVE")
    assert [(r.table, r.type) for r in hive_rows(hive)] == [("a", "EXCLUSIVE")]
    configure(b, SHORT)
    try:
        error = fails(b, f"SELECT count(*) FROM {DB}.a")
        assert "LOCK_CONFLICT" in error and f"{DB}@a" in error, error
        assert ok(b, f"SELECT count(*) FROM {DB}.b") == [[1]]
    finally:
        configure(b, PATIENT)
    ok(a, f"UNLOCK TABLE {DB}.a")
    assert hive_rows(hive) == []
    assert ok(b, f"SELECT count(*) FROM {DB}.a") == [[4]]
    assert "NOT_LOCKED" in fails(a, f"UNLOCK TABLE {DB}.a")


def test_a_partition_writer_in_one_driver_and_readers_in_the_other(drivers, hive):
    """A's write of p=2 keeps B off p=2 and off other writes of the table (its writers' facet)
    while B reads p=1; queued, B's read of p=2 runs as soon as A's write ends."""
    a, b = drivers
    sql = f"INSERT INTO {DB}.pt PARTITION (p='2') SELECT slow(k, 2) FROM {DB}.a"
    assert a.send({"op": "bg", "sql": sql})["started"]
    assert wait_for(lambda: any(r.partition == "p=2" for r in hive_rows(hive)), 60, 0.1)
    configure(b, SHORT)
    try:
        error = fails(b, f"SELECT count(*) FROM {DB}.pt WHERE p = '2'")
        assert "LOCK_CONFLICT" in error and f"{DB}@pt@p=2" in error, error
        error = fails(b, f"INSERT INTO {DB}.pt PARTITION (p='4') SELECT 1")
        assert "LOCK_CONFLICT" in error and "_sparklock_writers" in error, error
        assert ok(b, f"SELECT count(*) FROM {DB}.pt WHERE p = '1'") == [[1]]
    finally:
        configure(b, PATIENT)
    started = time.monotonic()
    assert ok(b, f"SELECT count(*) FROM {DB}.pt WHERE p = '2'") == [[5]]  # after A's insert
    waited = time.monotonic() - started
    assert hive_rows(hive) == []
    print(f"\nB's read of p=2 queued {waited:.1f} s behind A's write")


def test_a_read_of_1000_partitions(drivers, hive):
    """A full read locks every partition in one request; a Hive writer of one of them waits
    for it, a Hive writer of another table does not."""
    a, _ = drivers
    sql = f"SELECT sum(slow(v, CASE WHEN v = 0 THEN 3 ELSE 0 END)) FROM {DB}.wide"
    assert a.send({"op": "bg", "sql": sql})["started"]
    assert wait_for(lambda: hive_rows(hive), 120, 0.1)
    rows = hive_rows(hive)
    parts = {r.partition for r in rows if r.table == "wide"}
    assert parts == {f"p={i}" for i in range(WIDE)}
    assert {r.type for r in rows} == {"SHARED_READ"} and len({r.lockid for r in rows}) == 1
    writer = hive.statement("hive-writer", "bob", f"{DB}@wide@p=7:X")
    other = hive.statement("hive-other", "bob", f"{DB}@b:X")
    assert (writer.state, other.state) == ("WAITING", "ACQUIRED")
    hive.release(other)
    assert hive.wait(writer, 60)  # once the read ended
    hive.release(writer)
    assert wait_for(lambda: not hive_rows(hive), 10)


def test_crossed_lock_tables_in_two_drivers_fail_the_younger_with_lock_deadlock(drivers, hive):
    """A holds a and asks for b, B holds b and asks for a: B's request closed the cycle (the
    youngest waiter), so it fails with LOCK_DEADLOCK at once, long before its 30 s budget, and
    leaves no WAITING request behind; A's is granted once B unlocks b."""
    a, b = drivers
    ok(a, f"LOCK TABLE {DB}.a EXCLUSIVE")
    ok(b, f"LOCK TABLE {DB}.b EXCLUSIVE")
    assert a.send({"op": "bg", "sql": f"LOCK TABLE {DB}.b EXCLUSIVE", "id": "a-wants-b"})["started"]
    assert wait_for(lambda: [r for r in hive_rows(hive) if r.state == "WAITING"], 60, 0.05)
    started = time.monotonic()
    error = fails(b, f"LOCK TABLE {DB}.a EXCLUSIVE")
    took = time.monotonic() - started
    assert "LOCK_DEADLOCK" in error and f"{DB}@a" in error, error
    assert "deadlock between 2 waiting statements" in error and "victim:" in error, error
    assert took < 5, took
    waiting = [(r.table, r.state) for r in hive_rows(hive) if r.state == "WAITING"]
    assert waiting == [("b", "WAITING")]  # A's request only: B's was withdrawn
    rows = show_extended(a)
    assert {(r["name"], r["state"], r["alive"]) for r in rows} == {
        (f"{DB}@a", "ACQUIRED", "true"),
        (f"{DB}@b", "ACQUIRED", "true"),
        (f"{DB}@b", "WAITING", "true"),
    }
    # B sees A's requests alive from their heartbeats (its own: this process's)
    assert {(r["name"], r["lock_type"], r["alive"]) for r in show_extended(b)} == {
        (f"{DB}@a", "EXPLICIT", "true"),
        (f"{DB}@b", "EXPLICIT", "true"),
    }
    ok(b, f"UNLOCK TABLE {DB}.b")
    assert a.send({"op": "result", "id": "a-wants-b", "timeout": 60})["ok"]
    ok(a, f"UNLOCK TABLE {DB}.a")
    ok(a, f"UNLOCK TABLE {DB}.b")
    assert hive_rows(hive) == []
    print(f"\nthe deadlock across two drivers was broken {took:.2f} s after it closed")


def test_a_killed_driver_s_locks_expire(drivers, hive, hive_metastore):
    """B dies holding an explicit lock and a running statement's locks: nobody heartbeats them,
    and the metastore drops them after its timeout (10 s); A's queued write then runs."""
    a, b = drivers
    ok(b, f"LOCK TABLE {DB}.b EXCLUSIVE")
    assert b.send({"op": "bg", "sql": f"SELECT sum(slow(k, 600)) FROM {DB}.a"})["started"]
    assert wait_for(lambda: {r.table for r in hive_rows(hive)} >= {"a", "b"}, 60, 0.1)
    b.kill()
    killed = time.monotonic()
    ok(a, f"INSERT INTO {DB}.a SELECT * FROM {DB}.b", timeout=60)  # waits for both locks
    freed = time.monotonic() - killed
    assert 2 < freed < 30, freed
    assert hive_rows(hive) == []
    print(f"\nthe killed driver's locks were gone {freed:.1f} s after the kill")
