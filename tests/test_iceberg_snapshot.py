"""An Iceberg write that waited for its lock reads what the lock protects: its locks are taken
while Spark optimizes it, before its scan (and the snapshot its commit validates from) exists,
and the tables are loaded again once they are granted.

Each waiting case: another writer holds EXCLUSIVE on the table; the statement under test is
analysed (Iceberg loads the table: snapshot S0) and waits; the other writer commits a change to
the very row the statement touches (snapshot S1, a session with sparklock off standing for the
holder's own statement) and lets go. Granted, the statement must plan from S1: no Iceberg
``ValidationException``, and the row shows both changes (no lost update). Before this the
statement kept S0 and failed at commit. Also: a plan optimized outside an execution (explain())
still locks when it runs, each statement asks for its locks once, and a statement whose planning
fails after the early grant leaves nothing held. One Iceberg session for the module.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.support import iceberg
from tests.support.locks import (
    assert_no_leftover_locks,
    policy,
    requested,
    session_manager,
    top_level,
    wait_for,
)

pytestmark = [pytest.mark.spark, pytest.mark.iceberg]

_MOR = (
    "TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', 'write.update.mode' = "
    "'merge-on-read', 'write.merge.mode' = 'merge-on-read', 'format-version' = '2')"
)
# The waiter's budget: long enough for the holder's commit on a loaded machine.
PATIENT = {"spark.sparklock.lock.numRetries": "600", "spark.sparklock.lock.retryInterval": "100ms"}


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    with iceberg.module_session(
        tmp_path_factory, "test_iceberg_snapshot", ("CREATE NAMESPACE ice.db",)
    ) as session:
        yield session


def _table(spark, name: str, props: str = "") -> str:
    """A fresh table of four rows in one data file (so every write touches the same file)."""
    table = f"ice.db.{name}"
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"CREATE TABLE {table} (id INT, v INT) USING iceberg {props}")
    spark.sql(
        f"INSERT INTO {table} SELECT /*+ COALESCE(1) */ * FROM VALUES "
        "(1, 10), (2, 20), (3, 30), (4, 40) AS s(id, v)"
    )
    return table


def _rows(spark, table: str) -> set[tuple[int, int]]:
    return {(r[0], r[1]) for r in spark.sql(f"SELECT id, v FROM {table}").collect()}


def _waiting(manager) -> bool:
    from sparklock.locks.model import LockState

    return any(i.state == LockState.WAITING for i in manager.list_locks(None, waiting=True))


def _run_after_a_commit_it_waited_for(spark, table: str, statement: str) -> list[BaseException]:
    """``statement`` runs in a session of its own while the table is held EXCLUSIVE; once it
    waits, an unlocked writer adds 100 to row 2 and the hold ends. Its errors, if any."""
    from sparklock.locks.model import LockMode, LockRequest
    from sparklock.locks.objects import LockObject

    waiter = spark.newSession()
    for key, value in PATIENT.items():
        waiter.conf.set(key, value)
    other = spark.newSession()
    other.conf.set("spark.sparklock.enabled", "false")  # the holder's own statement
    manager = session_manager(waiter)
    obj = LockObject.of_catalog_table("ice", ("db",), table.rsplit(".", 1)[1])
    held = manager.acquire([LockRequest(obj, LockMode.EXCLUSIVE)], owner="holder", query_id="h")
    errors: list[BaseException] = []

    def run() -> None:
        try:
            waiter.sql(statement)
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: _waiting(manager), 60), "the statement never waited"
        other.sql(f"UPDATE {table} SET v = v + 100 WHERE id = 2")  # commits while held
    finally:
        manager.release(held)
    thread.join(120)
    assert not thread.is_alive(), "the statement did not finish after the grant"
    return errors


CASES = [
    (
        "merge",
        "",
        "MERGE INTO {t} t USING (SELECT 2 AS id, 5 AS d) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = t.v + s.d",
        {(1, 10), (2, 125), (3, 30), (4, 40)},
    ),
    (
        "update",
        "",
        "UPDATE {t} SET v = v + 5 WHERE id = 2",
        {(1, 10), (2, 125), (3, 30), (4, 40)},
    ),
    ("delete", "", "DELETE FROM {t} WHERE id = 2", {(1, 10), (3, 30), (4, 40)}),
    (  # merge-on-read: Spark's WriteDelta, position deletes against the snapshot it read
        "merge_mor",
        _MOR,
        "MERGE INTO {t} t USING (SELECT 2 AS id, 5 AS d) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = t.v + s.d",
        {(1, 10), (2, 125), (3, 30), (4, 40)},
    ),
]


@pytest.mark.parametrize("name,props,statement,expected", CASES, ids=[c[0] for c in CASES])
def test_a_write_that_waited_plans_from_the_snapshot_its_lock_protects(
    spark, name, props, statement, expected
):
    table = _table(spark, name, props)
    errors = _run_after_a_commit_it_waited_for(spark, table, statement.format(t=table))
    assert not errors, f"{name} failed after its grant: {str(errors[0])[:600]}"
    assert _rows(spark, table) == expected
    assert_no_leftover_locks(spark)


def test_each_statement_asks_for_its_locks_once(spark):
    table = _table(spark, "once")
    merge = (
        f"MERGE INTO {table} t USING (SELECT 1 AS id) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = 0"
    )
    # taken while optimized, found held by the lock node of the same execution
    assert requested(spark, lambda: spark.sql(merge)) == [
        [("ice.", "SHARED"), ("ice.db.", "SHARED"), (table, "EXCLUSIVE")]
    ]
    assert requested(spark, lambda: spark.table(table).collect()) == [
        [("ice.", "SHARED"), ("ice.db.", "SHARED"), (table, "SHARED")]
    ]
    assert_no_leftover_locks(spark)


def test_a_plan_optimized_before_its_action_still_locks_when_it_runs(spark):
    """explain() optimizes outside any execution: nothing is taken then, and the action (whose
    plan is already made) locks at pre-execution, as every other statement does."""
    from sparklock.locks.model import LockMode, LockRequest
    from sparklock.locks.objects import LockObject

    table = _table(spark, "explained")
    df = spark.table(table).where("id > 1")
    df.explain()
    manager = session_manager(spark)
    assert manager.list_locks(None) == []
    obj = LockObject.of_catalog_table("ice", ("db",), "explained")
    held = manager.acquire([LockRequest(obj, LockMode.EXCLUSIVE)], owner="holder", query_id="h")
    rows: list[int] = []
    # collect() runs the plan explain() made (count() would plan a query of its own)
    thread = threading.Thread(target=lambda: rows.append(len(df.collect())), daemon=True)
    try:
        thread.start()
        assert wait_for(lambda: _waiting(manager), 60), "the action did not wait for the lock"
        time.sleep(0.5)
        assert not rows, "the action ran while the table was held EXCLUSIVE"
    finally:
        manager.release(held)
    thread.join(60)
    assert rows == [3]
    assert_no_leftover_locks(spark)


def test_nothing_is_left_held_when_planning_fails_after_the_early_grant(spark):
    """A cartesian product refused by the optimizer (Check Cartesian Products runs after the
    locks were taken): the statement fails with Spark's error, and its execution's end releases
    what it was granted."""
    from sparklock.spark.builder import callback_of

    table = _table(spark, "cartesian")
    session = spark.newSession()
    session.conf.set("spark.sql.crossJoin.enabled", "false")
    statement = f"SELECT * FROM {table} a JOIN {table} b"
    with callback_of(session).recording() as recorded, pytest.raises(Exception) as info:
        session.sql(statement).collect()
    assert "cartesian" in str(info.value).lower(), str(info.value)[:400]
    assert "LOCK_" not in str(info.value)
    # granted before the optimizer refused the plan, and once (Spark may plan it again)
    assert [policy(f) for f in top_level(list(recorded))] == [
        [("ice.", "SHARED"), ("ice.db.", "SHARED"), (table, "SHARED")]
    ]
    assert_no_leftover_locks(spark)
