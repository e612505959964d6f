"""Iceberg writes lock the identity partitions they pin, with Iceberg's own runtime jar: golden
EXPLAIN LOCKS sets of each pinned form and each fallback to the whole table, and two sessions
writing disjoint identity partitions at once while a whole-table MERGE waits.

Pinned means every row the statement deletes or writes has ``p = constant`` on an *identity*
partition field: a static partition, VALUES rows all constant there, a DELETE/UPDATE/MERGE
condition fixing it (copy-on-write and merge-on-read alike), ``INSERT OVERWRITE ... PARTITION``,
``overwritePartitions()`` of constant rows. Other transforms (``days``, ``bucket``,
``truncate``), a partition spec evolved from one not partitioned by the column, a column the
statement assigns, rows a MERGE inserts from its source or changes outside its condition: the
table. One Iceberg session for the module (``tests/support/iceberg``).
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.support import iceberg
from tests.support.locks import explain, requested, session_manager

pytestmark = [pytest.mark.spark, pytest.mark.iceberg]

CATALOG = ("ice.", "SHARED")
NAMESPACE = ("ice.db.", "SHARED")


def S(name):  # noqa: N802
    return (name, "SHARED")


def X(name):  # noqa: N802
    return (name, "EXCLUSIVE")


_MOR = (
    "TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', 'write.update.mode' = "
    "'merge-on-read', 'write.merge.mode' = 'merge-on-read', 'format-version' = '2')"
)


SETUP_SQL = (
    "CREATE NAMESPACE ice.db",
    "CREATE TABLE ice.db.t (id INT, p STRING) USING iceberg PARTITIONED BY (p)",
    f"CREATE TABLE ice.db.mor (id INT, p STRING) USING iceberg PARTITIONED BY (p) {_MOR}",
    "CREATE TABLE ice.db.t2 (id INT, q STRING, p STRING) USING iceberg PARTITIONED BY (q, p)",
    "CREATE TABLE ice.db.s (id INT, p STRING) USING iceberg",
    "CREATE TABLE ice.db.dp (id INT, ts TIMESTAMP, p STRING) USING iceberg "
    "PARTITIONED BY (days(ts), p)",
    "CREATE TABLE ice.db.days (id INT, ts TIMESTAMP, p STRING) USING iceberg "
    "PARTITIONED BY (days(ts))",
    "CREATE TABLE ice.db.bk (id INT, p STRING) USING iceberg PARTITIONED BY (bucket(4, p))",
    "CREATE TABLE ice.db.tr (id INT, p STRING) USING iceberg PARTITIONED BY (truncate(1, p))",
    "CREATE TABLE ice.db.ev (id INT, p STRING) USING iceberg",
    "INSERT INTO ice.db.ev VALUES (1, 'a'), (2, 'b')",
    "ALTER TABLE ice.db.ev ADD PARTITION FIELD p",
    "INSERT INTO ice.db.t VALUES (1, 'a'), (2, 'b')",
    "INSERT INTO ice.db.mor VALUES (1, 'a'), (2, 'b')",
    "INSERT INTO ice.db.s VALUES (1, 'z'), (2, 'a')",
)


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    with iceberg.module_session(tmp_path_factory, "test_iceberg_partitions", SETUP_SQL) as session:
        yield session


def pinned(table: str, *partitions: str, reads: tuple = ()) -> list:
    """SHARED on ``ice.db.<table>``, EXCLUSIVE on each of its ``partitions`` (``p=a``)."""
    name = f"ice.db.{table}"
    return [CATALOG, NAMESPACE, S(name), *(X(f"{name}@{p}") for p in partitions), *reads]


def whole(table: str, reads: tuple = ()) -> list:
    return [CATALOG, NAMESPACE, X(f"ice.db.{table}"), *reads]


SOURCE = (S("ice.db.s"),)
ON = "ON t.id = s.id AND t.p = 'a'"

PINNED = [
    ("INSERT INTO ice.db.t PARTITION (p = 'a') VALUES (3)", pinned("t", "p=a")),
    ("INSERT INTO ice.db.t VALUES (3, 'a'), (4, 'a')", pinned("t", "p=a")),
    ("INSERT INTO ice.db.t VALUES (3, 'a'), (4, 'b')", pinned("t", "p=a", "p=b")),
    ("INSERT INTO ice.db.t SELECT id, 'a' FROM ice.db.s", pinned("t", "p=a", reads=SOURCE)),
    (
        "INSERT OVERWRITE ice.db.t PARTITION (p = 'a') SELECT id FROM ice.db.s",
        pinned("t", "p=a", reads=SOURCE),
    ),
    ("DELETE FROM ice.db.t WHERE p = 'a'", pinned("t", "p=a")),
    ("DELETE FROM ice.db.t WHERE 'a' = p AND id > 3", pinned("t", "p=a")),
    ("DELETE FROM ice.db.t WHERE p IN ('a', 'b')", pinned("t", "p=a", "p=b")),
    ("UPDATE ice.db.t SET id = 5 WHERE p = 'a'", pinned("t", "p=a")),
    (
        f"MERGE INTO ice.db.t t USING ice.db.s s {ON} WHEN MATCHED THEN UPDATE SET id = s.id",
        pinned("t", "p=a", reads=SOURCE),
    ),
    (
        f"MERGE INTO ice.db.t t USING ice.db.s s {ON} WHEN MATCHED THEN DELETE",
        pinned("t", "p=a", reads=SOURCE),
    ),
    (  # rows it inserts are constant in the pinned partition
        f"MERGE INTO ice.db.t t USING ice.db.s s {ON} WHEN MATCHED THEN UPDATE SET id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, p) VALUES (s.id, 'a')",
        pinned("t", "p=a", reads=SOURCE),
    ),
    # merge-on-read: Spark's WriteDelta instead of ReplaceData
    ("DELETE FROM ice.db.mor WHERE p = 'a'", pinned("mor", "p=a")),
    ("UPDATE ice.db.mor SET id = 5 WHERE p = 'a'", pinned("mor", "p=a")),
    (
        "MERGE INTO ice.db.mor t USING ice.db.s s ON t.id = s.id AND t.p = 'a' "
        "WHEN MATCHED THEN UPDATE SET id = s.id",
        pinned("mor", "p=a", reads=SOURCE),
    ),
    # a prefix of the identity fields pins that prefix, as Hive locks a partial spec
    ("DELETE FROM ice.db.t2 WHERE q = 'x'", pinned("t2", "q=x")),
    (
        "DELETE FROM ice.db.t2 WHERE p = 'a' AND q = 'x'",
        [*pinned("t2", "q=x/p=a"), S("ice.db.t2@q=x")],
    ),
    # an identity field beside another transform still pins its rows
    ("DELETE FROM ice.db.dp WHERE p = 'a'", pinned("dp", "p=a")),
]

FALLBACK = [
    ("INSERT INTO ice.db.t SELECT * FROM ice.db.s", whole("t", SOURCE)),
    ("DELETE FROM ice.db.t WHERE id = 1", whole("t")),
    ("DELETE FROM ice.db.t WHERE p = 'a' OR p = 'b'", whole("t")),
    ("DELETE FROM ice.db.t WHERE upper(p) = 'A'", whole("t")),
    ("UPDATE ice.db.t SET p = 'b' WHERE p = 'a'", whole("t")),  # moves rows to another one
    ("UPDATE ice.db.mor SET p = 'b' WHERE p = 'a'", whole("mor")),
    (
        f"MERGE INTO ice.db.t t USING ice.db.s s {ON} WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED THEN INSERT *",
        whole("t", SOURCE),
    ),
    (  # it deletes rows outside its condition
        f"MERGE INTO ice.db.t t USING ice.db.s s {ON} WHEN MATCHED THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN DELETE",
        whole("t", SOURCE),
    ),
    (
        f"MERGE INTO ice.db.t t USING ice.db.s s {ON} WHEN MATCHED THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET id = 0",
        whole("t", SOURCE),
    ),
    (  # a condition on the source's column pins no target partition
        "MERGE INTO ice.db.t t USING ice.db.s s ON s.p = 'a' AND t.id = s.id "
        "WHEN MATCHED THEN DELETE",
        whole("t", SOURCE),
    ),
    ("DELETE FROM ice.db.t2 WHERE p = 'a'", whole("t2")),  # not a prefix: q is first
    # no identity field on the column: other transforms, a spec evolved from none
    ("DELETE FROM ice.db.days WHERE p = 'a'", whole("days")),
    ("DELETE FROM ice.db.days WHERE ts = TIMESTAMP '2026-01-01 00:00:00'", whole("days")),
    ("DELETE FROM ice.db.bk WHERE p = 'a'", whole("bk")),
    ("DELETE FROM ice.db.tr WHERE p = 'a'", whole("tr")),
    ("INSERT INTO ice.db.bk VALUES (1, 'a')", whole("bk")),
    ("DELETE FROM ice.db.ev WHERE p = 'a'", whole("ev")),
]


def _id(case) -> str:
    return case[0][:60]


@pytest.mark.parametrize("statement,expected", PINNED, ids=[_id(c) for c in PINNED])
def test_pinned_iceberg_writes_lock_their_identity_partitions(spark, statement, expected):
    assert explain(spark, statement) == sorted(expected)


@pytest.mark.parametrize("statement,expected", FALLBACK, ids=[_id(c) for c in FALLBACK])
def test_unpinned_iceberg_writes_lock_the_table(spark, statement, expected):
    assert explain(spark, statement) == sorted(expected)


def test_dataframe_writes_pin_as_their_rows(spark):
    constant = spark.range(8, 10).selectExpr("CAST(id AS INT) AS id", "'b' AS p")
    computed = spark.range(8, 10).selectExpr("CAST(id AS INT) AS id", "IF(id = 8, 'b', 'c') AS p")
    # rows of a Python list are an RDD to Spark: their values are known only once it runs
    local = spark.createDataFrame([(8, "b")], "id INT, p STRING")
    assert requested(spark, lambda: constant.writeTo("ice.db.t").append()) == [
        sorted(pinned("t", "p=b"))
    ]
    assert requested(spark, lambda: constant.writeTo("ice.db.t").overwritePartitions()) == [
        sorted(pinned("t", "p=b"))
    ]
    for df in (computed, local):
        assert requested(spark, lambda: df.writeTo("ice.db.t").overwritePartitions()) == [  # noqa: B023
            sorted(whole("t"))
        ]
    assert {tuple(r) for r in spark.sql("SELECT id, p FROM ice.db.t WHERE p = 'b'").collect()} == {
        (8, "b")
    }


def test_a_read_of_one_partition_shares_the_table_only(spark):
    # Iceberg reads a snapshot: no commit breaks it, so a pinned writer need not wait for it
    assert explain(spark, "SELECT * FROM ice.db.t WHERE p = 'a'") == sorted(
        [CATALOG, NAMESPACE, S("ice.db.t")]
    )


# -- two sessions: disjoint identity partitions proceed together, a whole-table MERGE waits ---
FAST = {"spark.sparklock.lock.numRetries": "1", "spark.sparklock.lock.retryInterval": "10ms"}
PATIENT = {"spark.sparklock.lock.numRetries": "600", "spark.sparklock.lock.retryInterval": "100ms"}
WHOLE_MERGE = (
    "MERGE INTO ice.db.t t USING ice.db.s s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)


def test_writers_of_disjoint_partitions_proceed_while_the_same_partition_conflicts(spark):
    holder = spark.newSession()
    writer = spark.newSession()
    for key, value in FAST.items():
        writer.conf.set(key, value)
    holder.sql("LOCK TABLE ice.db.t PARTITION (p = 'a') EXCLUSIVE")
    try:
        began = time.monotonic()
        writer.sql("INSERT INTO ice.db.t PARTITION (p = 'b') VALUES (7)")
        writer.sql("DELETE FROM ice.db.t WHERE p = 'b' AND id = 2")
        writer.sql("UPDATE ice.db.t SET id = 70 WHERE p = 'b' AND id = 7")
        writer.sql(
            "MERGE INTO ice.db.t t USING ice.db.s s ON t.id = s.id AND t.p = 'b' "
            "WHEN MATCHED THEN UPDATE SET id = s.id"
        )
        proceeded = time.monotonic() - began
        for statement in (
            "DELETE FROM ice.db.t WHERE p = 'a'",
            "UPDATE ice.db.t SET id = 0 WHERE p = 'a'",
            "INSERT INTO ice.db.t VALUES (5, 'a')",
        ):
            with pytest.raises(Exception) as info:
                writer.sql(statement)
            assert "LOCK_CONFLICT" in str(info.value), (statement, str(info.value)[:400])
            assert "ice.db.t@p=a" in str(info.value), statement
    finally:
        holder.sql("UNLOCK TABLE ice.db.t PARTITION (p = 'a')")
    print(f"\nfour writes of p=b while p=a was held: {proceeded:.2f} s")
    # read by the writer: each session's Iceberg catalog caches the tables it loaded
    assert (70, "b") in {tuple(r) for r in writer.sql("SELECT id, p FROM ice.db.t").collect()}
    assert writer.sql("SELECT count(*) FROM ice.db.t WHERE p = 'a'").collect()[0][0] == 1


def test_a_whole_table_merge_waits_for_a_partition_writer_and_then_runs(spark):
    """Another driver's write of p=a holds what a pinned write holds (SHARED on the table,
    EXCLUSIVE on p=a): a write of p=b runs beside it, a whole-table MERGE waits in line (the
    default: it does not fail) and runs once the writer is done. An explicit ``LOCK TABLE ...
    PARTITION`` locks exactly the partition, as Hive's does, so it is no such writer."""
    from sparklock.locks.model import LockMode, LockRequest
    from sparklock.locks.objects import LockObject

    table = LockObject.of_catalog_table("ice", ("db",), "t")
    part = LockObject.of_partition(table.database, "t", {"p": "a"})
    merger = spark.newSession()
    # Its own wait budget, and the manager it really uses: a session inherits the settings an
    # earlier module's session was launched with (the JVM's system properties), which may
    # name another manager or a short budget.
    for key, value in PATIENT.items():
        merger.conf.set(key, value)
    manager = session_manager(merger)
    held = manager.acquire(
        [LockRequest(table, LockMode.SHARED), LockRequest(part, LockMode.EXCLUSIVE)],
        owner="writer-of-a",
        query_id="q-a",
    )
    done: list[float] = []
    errors: list[BaseException] = []

    def merge() -> None:
        try:
            merger.sql(WHOLE_MERGE)
            done.append(time.monotonic())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    thread = threading.Thread(target=merge, daemon=True)
    try:
        spark.sql("DELETE FROM ice.db.t WHERE p = 'b' AND id = 999")  # p=b: runs beside p=a
        thread.start()
        time.sleep(2.0)
        assert not errors, f"the MERGE failed while it should wait: {str(errors[0])[:400]}"
        assert not done, "the whole-table MERGE ran while p=a was written"
    finally:
        released = time.monotonic()
        manager.release(held)
    thread.join(120)
    assert not errors, errors
    assert done and done[0] >= released
