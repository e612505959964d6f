"""Delta writes lock the partitions they pin, with Delta's own jars: golden EXPLAIN LOCKS sets
of each pinned form and each fallback to the whole table, and two sessions writing disjoint
partitions at once while the same partition conflicts.

Pinned means the statement fixes the table's leading partition columns to constants: a static
partition spec, ``REPLACE WHERE``/``replaceWhere``, a DELETE/UPDATE/MERGE condition whose
conjuncts do (``p = 1``, ``1 = p``, ``p IN (1, 2)``), ``OPTIMIZE ... WHERE``. Anything else
(OR, a function of the column, a partition column assigned, rows a MERGE inserts) locks the
table. One Delta session for the module (``tests/support/delta``); runs where a Delta release
accepts the installed pyspark (``tests/versions.py 3.5`` and ``4.2.0``).
"""

from __future__ import annotations

import time

import pytest

from tests.support import delta
from tests.support.locks import explain, policy, requested

pytestmark = [pytest.mark.spark, pytest.mark.delta, delta.needs_delta]

D = ("default", "SHARED")


def S(name):  # noqa: N802
    return (name, "SHARED")


def X(name):  # noqa: N802
    return (name, "EXCLUSIVE")


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark import SparkContext

    root = tmp_path_factory.mktemp("delta_partitions")
    before = delta.system_properties(SparkContext._jvm) if SparkContext._jvm else None
    session = delta.delta_session("test_delta_partitions", root / "warehouse")
    for stmt in (
        "CREATE TABLE d (id INT, p INT, v STRING) USING delta PARTITIONED BY (p)",
        "CREATE TABLE d2 (id INT, q STRING, p INT) USING delta PARTITIONED BY (q, p)",
        "CREATE TABLE s (id INT, p INT, v STRING) USING delta",
        "INSERT INTO d VALUES (1, 1, 'a'), (2, 2, 'b')",
        "INSERT INTO s VALUES (1, 1, 'z')",
    ):
        session.sql(stmt)
    yield session
    jvm = session._jvm
    session.stop()
    delta.restore_system_properties(jvm, before or dict.fromkeys(delta.system_properties(jvm)))


def pinned(*partitions: str, reads: tuple = ()) -> list:
    """SHARED on table ``d``, EXCLUSIVE on each of its ``partitions`` (``p=1``)."""
    return [D, S("default@d"), *(X(f"default@d@{p}") for p in partitions), *reads]


WHOLE = [D, X("default@d")]
SOURCE = (S("default@s"),)

PINNED = [
    ("INSERT INTO d PARTITION (p=1) SELECT id, v FROM s", pinned("p=1", reads=SOURCE)),
    ("INSERT OVERWRITE d PARTITION (p=1) SELECT id, v FROM s", pinned("p=1", reads=SOURCE)),
    ("INSERT INTO d REPLACE WHERE p = 1 SELECT * FROM s", pinned("p=1", reads=SOURCE)),
    ("INSERT INTO d VALUES (3, 1, 'c')", pinned("p=1")),  # every row in one partition
    ("DELETE FROM d WHERE p = 1", pinned("p=1")),
    ("DELETE FROM d WHERE 1 = p AND id > 3", pinned("p=1")),
    ("DELETE FROM d WHERE p IN (1, 2)", pinned("p=1", "p=2")),
    ("UPDATE d SET v = 'x' WHERE p = 1", pinned("p=1")),
    (
        "MERGE INTO d USING s ON d.p = 1 AND d.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
        pinned("p=1", reads=SOURCE),
    ),
    (
        "MERGE INTO d USING s ON d.id = s.id AND d.p = 2 WHEN MATCHED THEN DELETE",
        pinned("p=2", reads=SOURCE),
    ),
    ("OPTIMIZE d WHERE p = 1", pinned("p=1")),
    ("OPTIMIZE d WHERE p = 1 ZORDER BY (id)", pinned("p=1")),
    # a prefix of the partition columns pins that prefix, as Hive locks a partial spec
    ("DELETE FROM d2 WHERE q = 'a'", [D, S("default@d2"), X("default@d2@q=a")]),
    (
        "DELETE FROM d2 WHERE p = 1 AND q = 'a'",
        [D, S("default@d2"), S("default@d2@q=a"), X("default@d2@q=a/p=1")],
    ),
]

FALLBACK = [
    ("INSERT INTO d SELECT * FROM s", [*WHOLE, *SOURCE]),  # dynamic partition values
    ("DELETE FROM d WHERE id = 1", WHOLE),
    ("DELETE FROM d WHERE p = 1 OR p = 2", WHOLE),
    ("DELETE FROM d WHERE p + 0 = 1", WHOLE),
    ("DELETE FROM d WHERE p = id", WHOLE),
    ("UPDATE d SET p = 2 WHERE p = 1", WHOLE),  # moves rows into another partition
    (
        "MERGE INTO d USING s ON d.p = 1 AND d.id = s.id WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED THEN INSERT *",
        [*WHOLE, *SOURCE],
    ),
    (  # a condition on the source's partition column pins no target partition
        "MERGE INTO d USING s ON s.p = 1 AND d.id = s.id WHEN MATCHED THEN DELETE",
        [*WHOLE, *SOURCE],
    ),
    ("OPTIMIZE d", WHOLE),
    ("DELETE FROM d2 WHERE p = 1", [D, X("default@d2")]),  # not a prefix: q is first
]


def _id(case) -> str:
    return case[0][:48]


@pytest.mark.parametrize("statement,expected", PINNED, ids=[_id(c) for c in PINNED])
def test_pinned_delta_writes_lock_their_partitions(spark, statement, expected):
    assert explain(spark, statement) == sorted(expected)


@pytest.mark.parametrize("statement,expected", FALLBACK, ids=[_id(c) for c in FALLBACK])
def test_unpinned_delta_writes_lock_the_table(spark, statement, expected):
    assert explain(spark, statement) == sorted(expected)


def test_replace_where_of_a_dataframe_write_pins_its_partition(spark):
    location = spark.sql("DESCRIBE DETAIL d").collect()[0]["location"]
    rows = spark.createDataFrame([(9, 2, "r")], "id INT, p INT, v STRING")
    writer = rows.write.format("delta").mode("overwrite")
    got = requested(spark, lambda: writer.option("replaceWhere", "p = 2").save(location))
    assert got == [sorted(pinned("p=2"))]
    # Delta checks every row written against it: with the check off, rows may land anywhere
    key = "spark.databricks.delta.replaceWhere.constraintCheck.enabled"
    spark.conf.set(key, "false")
    try:
        got = requested(spark, lambda: writer.option("replaceWhere", "p = 2").save(location))
    finally:
        spark.conf.unset(key)
    assert got == [sorted(WHOLE)]
    assert spark.sql("SELECT id FROM d WHERE p = 2").collect()[0][0] == 9


def test_replace_where_of_save_as_table_pins_its_partition(spark):
    """saveAsTable plans a v2 replace; Delta runs it as an overwrite of the matching rows."""
    rows = spark.createDataFrame([(8, 2, "t")], "id INT, p INT, v STRING")
    writer = rows.write.format("delta").mode("overwrite").option("replaceWhere", "p = 2")
    before = spark.sql("SELECT count(*) FROM d WHERE p <> 2").collect()[0][0]
    assert requested(spark, lambda: writer.saveAsTable("d")) == [sorted(pinned("p=2"))]
    assert [tuple(r) for r in spark.sql("SELECT id, p FROM d WHERE p = 2").collect()] == [(8, 2)]
    assert spark.sql("SELECT count(*) FROM d WHERE p <> 2").collect()[0][0] == before
    # a table not there yet is created whole; a replace without replaceWhere replaces it whole
    fresh = rows.write.format("delta").mode("overwrite").option("replaceWhere", "p = 2")
    assert requested(spark, lambda: fresh.saveAsTable("d_new")) == [[D, X("default@d_new")]]
    whole = rows.write.format("delta").mode("overwrite")
    assert requested(spark, lambda: whole.saveAsTable("d_new")) == [[D, X("default@d_new")]]


def test_insert_into_ignores_replace_where_and_locks_the_table(spark):
    """Delta does not read replaceWhere from insertInto: the overwrite replaces every partition,
    so the table is locked whole (and the data shows why)."""
    spark.sql("CREATE TABLE dins (id INT, p INT) USING delta PARTITIONED BY (p)")
    spark.sql("INSERT INTO dins VALUES (1, 1), (2, 2)")
    rows = spark.createDataFrame([(3, 1)], "id INT, p INT")
    write = rows.write.option("replaceWhere", "p = 1")
    got = requested(spark, lambda: write.insertInto("dins", overwrite=True))
    assert got == [[D, X("default@dins")]]
    assert [tuple(r) for r in spark.sql("SELECT id, p FROM dins").collect()] == [(3, 1)]


def test_the_delta_table_api_pins_as_its_sql(spark):
    """DeltaTable.delete / update / merge / optimize().where lock the partitions their SQL does
    (a table of its own: the calls change its rows)."""
    from delta.tables import DeltaTable

    spark.sql("CREATE TABLE da (id INT, p INT, v STRING) USING delta PARTITIONED BY (p)")
    spark.sql("INSERT INTO da VALUES (1, 1, 'a'), (2, 2, 'b')")
    table = DeltaTable.forName(spark, "da")
    source = spark.table("s").alias("s")
    calls = [
        (lambda: table.delete("p = 1"), "DELETE FROM da WHERE p = 1"),
        (lambda: table.update("p = 1", {"v": "'x'"}), "UPDATE da SET v = 'x' WHERE p = 1"),
        (
            lambda: (
                table.alias("da")
                .merge(source, "da.p = 1 AND da.id = s.id")
                .whenMatchedUpdate(set={"v": "s.v"})
                .execute()
            ),
            "MERGE INTO da USING s ON da.p = 1 AND da.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v",
        ),
        (lambda: table.optimize().where("p = 1").executeCompaction(), "OPTIMIZE da WHERE p = 1"),
    ]
    p1 = [D, S("default@da"), X("default@da@p=1")]
    for api, sql in calls:
        assert explain(spark, sql) == sorted(p1 + ([S("default@s")] if "USING s" in sql else []))
        assert requested(spark, api) == [explain(spark, sql)], sql


def test_the_jvm_reports_constraints_as_the_dataclasses_read_them(spark):
    """A Delta command's constraints field and a v2 write's rowConstraints, as parsed from what
    the JVM sent (test_spark_bridge checks the records' and dataclasses' field names agree)."""
    from sparklock.rules.facts import ConstraintsField, to_wire
    from sparklock.spark.builder import callback_of
    from tests.support.locks import top_level

    with callback_of(spark).recording() as recorded:
        spark.sql("DELETE FROM d WHERE p IN (1, 2) AND id = 99")
        spark.sql("INSERT INTO d PARTITION (p = 3) SELECT id, v FROM s WHERE id = 99")
    delete, insert = top_level(list(recorded))
    (pins,) = [f for f in delete.fields if isinstance(f, ConstraintsField)]
    assert (pins.name, pins.partition_columns, pins.values) == (
        "writtenRows",
        ("p",),
        {"p": ("1", "2"), "id": ("99",)},  # facts on every column: Python picks the partitions
    )
    assert to_wire(insert)["writes"][0]["rowConstraints"] == {"p": ["3"]}


# -- two sessions: disjoint partitions proceed together, the same partition conflicts -----------
FAST = {"spark.sparklock.lock.numRetries": "1", "spark.sparklock.lock.retryInterval": "10ms"}


def test_writers_of_disjoint_partitions_proceed_while_the_same_partition_conflicts(spark):
    holder = spark.newSession()
    writer = spark.newSession()
    for key, value in FAST.items():
        writer.conf.set(key, value)
    holder.sql("LOCK TABLE d PARTITION (p = 1) EXCLUSIVE")
    try:
        began = time.monotonic()
        writer.sql("DELETE FROM d WHERE p = 2 AND id = 2")  # another partition: runs
        writer.sql("UPDATE d SET v = 'w' WHERE p = 2")
        writer.sql("INSERT INTO d PARTITION (p = 2) VALUES (7, 'n')")
        proceeded = time.monotonic() - began
        for statement in (
            "DELETE FROM d WHERE p = 1",
            "UPDATE d SET v = 'w' WHERE p = 1",
            "MERGE INTO d USING s ON d.p = 1 AND d.id = s.id WHEN MATCHED THEN DELETE",
            "OPTIMIZE d WHERE p = 1",
        ):
            with pytest.raises(Exception) as info:
                writer.sql(statement)
            assert "LOCK_CONFLICT" in str(info.value), (statement, str(info.value)[:400])
            assert "default@d@p=1" in str(info.value), statement
    finally:
        holder.sql("UNLOCK TABLE d PARTITION (p = 1)")
    print(f"\nthree writes of p=2 while p=1 was held: {proceeded:.2f} s")
    assert (7, "n") in {tuple(r) for r in spark.sql("SELECT id, v FROM d WHERE p = 2").collect()}
    assert spark.sql("SELECT count(*) FROM d WHERE p = 1").collect()[0][0] == 1  # untouched
    writer.sql("DELETE FROM d WHERE p = 1 AND id = 99")  # released: runs


# -- Structured Streaming into and out of Delta: each micro-batch locks what it reads and writes ---
def _until_stopped(query) -> None:
    assert query.awaitTermination(120), "the availableNow query did not finish"
    assert query.exception() is None, query.exception()


def test_a_stream_from_delta_into_delta_locks_each_micro_batch(spark, tmp_path):
    from sparklock.spark.builder import callback_of

    spark.sql("CREATE TABLE st (id INT, p INT, v STRING) USING delta PARTITIONED BY (p)")
    location = spark.sql("DESCRIBE DETAIL st").collect()[0]["location"]
    batch = sorted([D, S("default@s"), X("default@st")])
    for name, start in (
        ("table", lambda w: w.toTable("st")),
        ("path", lambda w: w.start(location)),  # Delta's sink by path: the table owning it
    ):
        writer = (
            spark.readStream.table("s")
            .writeStream.format("delta")
            .option("checkpointLocation", str(tmp_path / name))
            .trigger(availableNow=True)
        )
        with callback_of(spark).recording() as recorded:
            _until_stopped(start(writer))
        # every execution's set, nested ones too: the batch's write runs nested in its
        # micro-batch, where Delta's sink may have read its log first (and still holds that)
        got = [policy(f) for f in recorded]
        # one batch (s has one commit to read); Delta's source and sink read their tables'
        # logs besides, in executions of their own: SHARED only
        assert got.count(batch) == 1, (name, got)
        others = [lock for g in got if g != batch for lock in g]
        assert {mode for _, mode in others} <= {"SHARED"}, (name, got)
    assert spark.table("st").count() == 2 * spark.table("s").count()


def test_a_read_of_one_delta_partition_shares_the_table_only(spark):
    # Delta reads a snapshot: no commit breaks it, so a pinned writer need not wait for it
    assert explain(spark, "SELECT * FROM d WHERE p = 1") == [D, S("default@d")]


def test_a_micro_batch_into_delta_waits_for_a_reader_of_its_table(spark, tmp_path):
    spark.sql("CREATE TABLE sr (id INT, p INT, v STRING) USING delta")
    version = spark.sql("DESCRIBE HISTORY sr").collect()[0]["version"]
    holder = spark.newSession()
    holder.sql("LOCK TABLE sr SHARED")
    spark.conf.set("spark.sparklock.lock.numRetries", "1")  # a conflict fails at once
    try:
        query = (
            spark.readStream.table("s")
            .writeStream.format("delta")
            .option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(availableNow=True)
            .toTable("sr")
        )
        with pytest.raises(Exception, match="LOCK_CONFLICT"):  # the query fails with it
            query.awaitTermination(120)
    finally:
        spark.conf.unset("spark.sparklock.lock.numRetries")
        holder.sql("UNLOCK TABLE sr")
    # refused before Delta's sink wrote or committed anything
    assert spark.sql("DESCRIBE HISTORY sr").collect()[0]["version"] == version
    assert spark.table("sr").count() == 0
