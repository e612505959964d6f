"""The command table on a real local Spark session: every row's exact lock set.

Each SQL row is checked twice: ``EXPLAIN LOCKS <stmt>`` (analysed, never run) and, where Spark can
run it on parquet tables, the lock set the statement really requested when it ran (its top-level
execution's facts, recorded on the py4j path, through the service's policy). DataFrame writes and
reads, every action, RDD paths, v2 commands, an unrecognised command, and two writers crossing
(``INSERT INTO a SELECT FROM b`` / ``INSERT INTO b SELECT FROM a``) are covered too. After every
test no lock may be left (SHOW LOCKS empty). One ``local[2]`` session for the module, the default
embedded manager; objects are recreated fresh for every statement row.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from sparklock.locks.objects import LockObject  # noqa: E402
from tests.support.locks import (  # noqa: E402
    explain,
    requested,
    show_locks,
    wait_for,
)
from tests.support.spark import SparkSpec  # noqa: E402
from tests.support.spark_versions import needs_spark  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("no_leftover_locks")]

D = ("default", "SHARED")


def S(name):  # noqa: N802
    return (name, "SHARED")


def X(name):  # noqa: N802
    return (name, "EXCLUSIVE")


def W(table):  # noqa: N802 - the writers facet of a file-based table
    return (f"default@{table}@_sparklock_writers", "EXCLUSIVE")


def path_name(path: str) -> str:
    return LockObject.of_path(path).name


SPARK = SparkSpec(app="commands")


def sets(*lock_sets) -> list[list[tuple[str, str]]]:
    return [sorted(s) for s in lock_sets]


def fresh(spark):
    """t (partitioned, p=1 present), u, v (view of t), tv (temp view of u), database d2."""
    for s in (
        "UNCACHE TABLE IF EXISTS c",
        "DROP VIEW IF EXISTS c",
        "DROP VIEW IF EXISTS tv",
        "DROP VIEW IF EXISTS tv2",
        "CLEAR CACHE",
        "DROP VIEW IF EXISTS v",
        "DROP VIEW IF EXISTS v2",
        "DROP TABLE IF EXISTS t",
        "DROP TABLE IF EXISTS u",
        "DROP TABLE IF EXISTS u9",
        "DROP TABLE IF EXISTS n1",
        "DROP TABLE IF EXISTS n2",
        "DROP TABLE IF EXISTS n3",
        "DROP DATABASE IF EXISTS d2 CASCADE",
        "DROP DATABASE IF EXISTS d3 CASCADE",
        "CREATE TABLE t (a INT, p STRING) USING parquet PARTITIONED BY (p)",
        "CREATE TABLE u (a INT) USING parquet",
        "INSERT INTO t VALUES (1, '1')",
        "INSERT INTO u VALUES (1)",
        "CREATE VIEW v AS SELECT * FROM t",
        "CREATE OR REPLACE TEMPORARY VIEW tv AS SELECT * FROM u",
        "CREATE DATABASE d2",
    ):
        spark.sql(s)


T, U, V = "default@t", "default@u", "default@v"
P1 = "default@t@p=1"

# (statement, exact EXPLAIN LOCKS rows, whether it also runs on parquet tables here)
ROWS = [
    # views: SHARED on the view and on everything it reads; temporary views lock what they read
    ("SELECT * FROM v", [D, S(T), S(P1), S(V)], True),
    ("SELECT * FROM v WHERE p = '1'", [D, S(T), S(P1), S(V)], True),
    ("SELECT * FROM tv", [D, S(U)], True),
    ("CREATE VIEW v2 AS SELECT * FROM t", [D, S(T), S(P1), X("default@v2")], True),
    ("CREATE TEMPORARY VIEW tv2 AS SELECT * FROM t", [D, S(T), S(P1)], True),
    ("ALTER VIEW v AS SELECT * FROM u", [D, S(U), X(V)], True),
    ("ALTER VIEW v SET TBLPROPERTIES ('k'='v')", [D, X(V)], True),
    ("ALTER VIEW v WITH SCHEMA BINDING", [D, X(V)], True),
    ("DROP VIEW v", [D, X(V)], True),
    # DDL on tables
    ("DROP TABLE u", [D, X(U)], True),
    ("ALTER TABLE u RENAME TO u9", [D, X(U), X("default@u9")], True),
    ("ALTER VIEW v RENAME TO v2", [D, X(V), X("default@v2")], True),
    ("TRUNCATE TABLE u", [D, X(U)], True),
    ("TRUNCATE TABLE t PARTITION (p='1')", [D, S(T), X(P1)], True),
    ("ALTER TABLE t ADD COLUMNS (b INT)", [D, X(T)], True),
    ("ALTER TABLE t CHANGE COLUMN a a INT COMMENT 'x'", [D, X(T)], True),
    ("ALTER TABLE t ALTER COLUMN a COMMENT 'y'", [D, X(T)], True),
    ("ALTER TABLE t SET TBLPROPERTIES ('k'='v')", [D, X(T)], True),
    ("ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('k')", [D, X(T)], True),
    ("ALTER TABLE t SET LOCATION '/tmp/sparklock-unused'", [D, X(T)], False),
    ("ALTER TABLE t PARTITION (p='1') SET LOCATION '/tmp/sparklock-p'", [D, S(T), X(P1)], True),
    ("ALTER TABLE t ADD PARTITION (p='2')", [D, S(T), X("default@t@p=2")], True),
    ("ALTER TABLE t DROP PARTITION (p='1')", [D, S(T), X(P1)], True),
    (
        "ALTER TABLE t PARTITION (p='1') RENAME TO PARTITION (p='3')",
        [D, S(T), X(P1), X("default@t@p=3")],
        True,
    ),
    ("ALTER TABLE t SET SERDEPROPERTIES ('a'='b')", [D, S(T)], False),
    ("ALTER TABLE t SET SERDE 'x'", [D, S(T)], False),
    ("ALTER TABLE t PARTITION (p='1') SET SERDEPROPERTIES ('a'='b')", [D, S(T), S(P1)], False),
    ("CREATE TABLE n1 (a INT) USING parquet", [D, X("default@n1")], True),
    ("CREATE TABLE n2 USING parquet AS SELECT * FROM t", [D, S(T), S(P1), X("default@n2")], True),
    ("CREATE TABLE n3 LIKE t", [D, X("default@n3"), S(T)], True),
    ("LOAD DATA LOCAL INPATH '/tmp/x' INTO TABLE t PARTITION (p='1')", [D, S(T), X(P1)], False),
    ("LOAD DATA LOCAL INPATH '/tmp/x' OVERWRITE INTO TABLE u", [D, X(U)], False),
    ("ANALYZE TABLE t COMPUTE STATISTICS", [D, S(T)], True),
    ("ANALYZE TABLE t PARTITION (p='1') COMPUTE STATISTICS", [D, S(T), S(P1)], True),
    ("ANALYZE TABLE u COMPUTE STATISTICS FOR COLUMNS a", [D, S(U)], True),
    ("ANALYZE TABLES IN default COMPUTE STATISTICS NOSCAN", [D], True),
    ("CACHE TABLE u", [D, S(U)], True),
    ("CACHE LAZY TABLE v", [D, S(T), S(P1), S(V)], True),
    ("CACHE TABLE c AS SELECT * FROM u", [D, S(U)], True),
    ("UNCACHE TABLE IF EXISTS u", [D, S(U)], True),
    ("REFRESH TABLE t", [D, S(T)], True),
    ("ALTER TABLE t RECOVER PARTITIONS", [D, X(T)], True),
    ("MSCK REPAIR TABLE t", [D, X(T)], True),
    ("REPAIR TABLE t SYNC PARTITIONS", [D, X(T)], True),
    # databases
    ("CREATE DATABASE d3", [X("d3")], True),
    ("DROP DATABASE d2", [X("d2")], True),
    ("ALTER DATABASE d2 SET DBPROPERTIES ('a'='b')", [X("d2")], True),
    ("ALTER DATABASE d2 SET LOCATION '/tmp/sparklock-d2'", [X("d2")], False),
    # metadata reads
    ("DESCRIBE TABLE t", [D, S(T)], True),
    ("DESCRIBE TABLE t PARTITION (p='1')", [D, S(T)], True),
    ("SHOW CREATE TABLE t", [D, S(T)], True),
    ("SHOW CREATE TABLE t AS SERDE", [D, S(T)], False),
    ("SHOW TBLPROPERTIES t", [D, S(T)], True),
    ("SHOW PARTITIONS t", [D, S(T)], True),
    ("SHOW COLUMNS IN t", [D, S(T)], True),
    ("SHOW TABLE EXTENDED LIKE 't'", [D], True),
    ("SHOW VIEWS", [D], True),
    ("DESCRIBE DATABASE d2", [S("d2")], True),
    ("SHOW TABLES", [], True),
    # inserts
    ("INSERT INTO u SELECT a FROM t", [D, S(T), S(P1), X(U), W("u")], True),
    (
        "INSERT OVERWRITE TABLE t PARTITION (p='1') SELECT a FROM u",
        [D, S(T), S(U), X(P1), W("t")],
        True,
    ),
    # v2 commands of the session catalog (parquet tables cannot run them: analysed only)
    ("DELETE FROM u WHERE a = 1", [D, X(U)], False),
    ("UPDATE u SET a = 2", [D, X(U)], False),
    ("MERGE INTO u USING t ON u.a = t.a WHEN MATCHED THEN DELETE", [D, S(T), S(P1), X(U)], False),
]


# Statements an older Spark cannot parse: (since, what).
SINCE = {
    "ALTER VIEW v WITH SCHEMA BINDING": ((4, 0), "ALTER VIEW ... WITH SCHEMA BINDING"),
}


@pytest.mark.parametrize(
    "statement,expected,runs",
    [
        pytest.param(*r, id=r[0][:60], marks=[needs_spark(*SINCE[r[0]])] if r[0] in SINCE else [])
        for r in ROWS
    ],
)
def test_statement_locks(spark, statement, expected, runs):
    fresh(spark)
    assert explain(spark, statement) == sorted(expected)
    if runs:
        sets = requested(spark, lambda: spark.sql(statement).collect())
        assert sets, "the statement requested no locks"
        assert sets[0] == sorted(expected)


def test_insert_overwrite_directory_locks_the_path(spark, tmp_path):
    fresh(spark)
    out = tmp_path / "dir"
    stmt = f"INSERT OVERWRITE DIRECTORY '{out}' USING parquet SELECT * FROM t"
    expected = [D, S(T), S(P1), S("_sparklock-paths"), X(path_name(f"file:{out}"))]
    assert explain(spark, stmt) == sorted(expected)
    assert requested(spark, lambda: spark.sql(stmt)) == sets(expected)


def test_set_fileformat_is_not_spark_sql(spark):
    # Hive's ALTER TABLE ... SET FILEFORMAT: Spark's parser refuses it, so nothing runs or locks
    fresh(spark)
    with pytest.raises(Exception, match="SET FILEFORMAT"):
        spark.sql("ALTER TABLE t SET FILEFORMAT parquet")


def test_replace_columns_is_refused_on_v1_tables_before_locking(spark):
    # REPLACE COLUMNS is a v2-only command here (the ReplaceColumns row: facts-layer test)
    fresh(spark)
    with pytest.raises(Exception, match="REPLACE COLUMNS"):
        spark.sql("ALTER TABLE u REPLACE COLUMNS (a INT)")


def test_a_fail_safe_command_takes_exclusive_quietly(spark, caplog):
    # COMMENT ON TABLE (CommentOnTable) is deliberately not in the command table: the fail-safe
    # rule gives it EXCLUSIVE on the table it names, which is also the right lock for it; being
    # listed as fail-safe, it logs no warning (an unlisted class does: test_commands)
    from sparklock.rules.command_classes import FAIL_SAFE
    from sparklock.rules.commands import BY_CLASS, NO_LOCK_CLASSES

    comment = "org.apache.spark.sql.catalyst.plans.logical.CommentOnTable"
    assert comment not in BY_CLASS and comment not in NO_LOCK_CLASSES and comment in FAIL_SAFE
    fresh(spark)
    with caplog.at_level(logging.WARNING, logger="sparklock"):
        assert explain(spark, "COMMENT ON TABLE t IS 'c'") == [D, X(T)]
        assert requested(spark, lambda: spark.sql("COMMENT ON TABLE t IS 'c'")) == sets([D, X(T)])
    assert "not in the command table" not in caplog.text


# -- DataFrame writes and reads -----------------------------------------------------------------
def test_insert_into(spark):
    fresh(spark)
    df = spark.createDataFrame([(5,)], "a INT")
    assert requested(spark, lambda: df.write.insertInto("u")) == sets([D, X(U), W("u")])
    df2 = spark.createDataFrame([(5, "1")], "a INT, p STRING")
    # fully dynamic overwrite of a partitioned table (static mode): every partition is replaced
    assert requested(spark, lambda: df2.write.insertInto("t", overwrite=True)) == sets(
        [D, X(T), W("t")]
    )
    assert spark.table("t").count() == 1


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_save_as_table_existing(spark, mode):
    fresh(spark)
    df = spark.createDataFrame([(7,)], "a INT")
    got = requested(spark, lambda: df.write.mode(mode).format("parquet").saveAsTable("u"))
    assert got and (U, "EXCLUSIVE") in got[0], got
    assert all(name in (U, "default", W("u")[0]) for s in got for name, _ in s), got


def test_save_as_table_new(spark):
    fresh(spark)
    got = requested(spark, lambda: spark.table("t").write.saveAsTable("n1"))
    assert got == sets([D, S(T), S(P1), X("default@n1")])
    assert spark.table("n1").count() == 1


def table_location(spark, name: str) -> str:
    return spark.sql(f"DESCRIBE FORMATTED {name}").where("col_name = 'Location'").first()[1]


def test_read_by_path_locks_the_owning_table_or_partition(spark):
    fresh(spark)
    loc = table_location(spark, "t")
    assert requested(spark, lambda: spark.read.parquet(loc).collect()) == sets([D, S(T)])
    assert requested(spark, lambda: spark.read.parquet(loc + "/p=1").collect()) == sets(
        [D, S(T), S(P1)]
    )
    assert explain(spark, f"SELECT * FROM parquet.`{loc}`") == [D, S(T)]


def test_write_by_path_locks_the_owning_table(spark):
    fresh(spark)
    loc = table_location(spark, "t")
    df = spark.createDataFrame([(3,)], "a INT")
    got = requested(spark, lambda: df.write.mode("append").parquet(loc + "/p=4"))
    assert got == sets([D, S(T), X("default@t@p=4"), W("t")])
    got = requested(spark, lambda: spark.table("u").write.mode("append").parquet(loc))
    assert got == sets([D, S(U), X(T), W("t")])


def test_paths_no_table_owns_lock_a_path_object(spark, tmp_path):
    fresh(spark)
    free = f"file:{tmp_path / 'free'}"
    obj = path_name(free)
    assert obj.startswith("_sparklock-paths@file%3A%2F")
    df = spark.createDataFrame([(1,)], "a INT")
    assert requested(spark, lambda: df.write.parquet(free)) == sets([S("_sparklock-paths"), X(obj)])
    assert requested(spark, lambda: spark.read.parquet(free).collect()) == sets(
        [S("_sparklock-paths"), S(obj)]
    )
    assert requested(spark, lambda: spark.read.parquet(free).write.insertInto("u")) == sets(
        [S("_sparklock-paths"), S(obj), D, X(U), W("u")]
    )


# -- every action locks -------------------------------------------------------------------------
def _to_pandas(df):
    return df.toPandas()  # pandas comes with the dev extra


ACTIONS = {
    "collect": lambda df: df.collect(),
    "show": lambda df: df.show(),
    "count": lambda df: df.count(),
    "first": lambda df: df.first(),
    "take": lambda df: df.take(1),
    "foreach": lambda df: df.foreach(lambda r: None),
    "foreachPartition": lambda df: df.foreachPartition(lambda it: None),
    "toLocalIterator": lambda df: list(df.toLocalIterator()),
    "toPandas": _to_pandas,
    "write": lambda df: df.write.mode("overwrite").format("noop").save(),
    "rdd.count": lambda df: df.rdd.count(),
    "rdd.map.collect": lambda df: df.rdd.map(lambda r: r[0]).collect(),
}


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_every_action_locks_what_it_reads(spark, action):
    fresh(spark)
    got = requested(spark, lambda: ACTIONS[action](spark.table("t").where("p = '1'")))
    assert got, "no lock was requested"
    # a write to a v2 sink (noop) reads t unpruned: the whole table SHARED, still no more
    assert all(S(T) in s and set(s) <= {D, S(T), S(P1)} for s in got), got
    # no_leftover_locks: SHOW LOCKS is empty afterwards (RDD paths: once the execution ends)


def test_partly_consumed_local_iterator_releases_when_dropped(spark):
    fresh(spark)
    it = spark.table("t").toLocalIterator()
    next(it)
    del it
    import gc

    gc.collect()
    # no_leftover_locks waits for the query-end listener


# -- locks held while a statement runs, seen from another session -------------------------------
@pytest.fixture
def slow_udf(spark):
    from pyspark.sql.types import IntegerType

    def slow(x):
        import time as _t

        _t.sleep(1.5)
        return x

    spark.udf.register("slow", slow, IntegerType())
    return "slow"


def held_while(spark, action, wanted) -> list[tuple[str, str]]:
    """Run ``action`` in a thread; SHOW LOCKS from another session once ``wanted`` are held."""
    other = spark.newSession()
    errors: list = []

    def run():
        try:
            action()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    th = threading.Thread(target=run)
    th.start()
    seen: list = [[]]

    def holding():
        seen[0] = show_locks(other)
        return set(wanted) <= set(seen[0])

    ok = wait_for(holding, timeout=30)
    th.join(60)
    assert not th.is_alive() and not errors, errors
    assert ok, seen[0]
    return seen[0]


def test_select_holds_shared_while_running(spark, slow_udf):
    fresh(spark)
    seen = held_while(spark, lambda: spark.sql("SELECT slow(a) FROM t").collect(), [S(T)])
    assert seen == sorted([D, S(T), S(P1)])


def test_insert_holds_its_lock_set_while_running(spark, slow_udf):
    fresh(spark)
    seen = held_while(spark, lambda: spark.sql("INSERT INTO u SELECT slow(a) FROM t"), [X(U), S(T)])
    assert seen == sorted([D, S(T), S(P1), X(U), W("u")])


def test_ctas_holds_the_new_table_exclusive_while_running(spark, slow_udf):
    fresh(spark)
    seen = held_while(
        spark,
        lambda: spark.sql("CREATE TABLE n2 USING parquet AS SELECT slow(a) AS a FROM t"),
        [X("default@n2"), S(T)],
    )
    assert {D, S(T), X("default@n2")} <= set(seen)


def test_dataframe_action_holds_shared_while_running(spark, slow_udf):
    fresh(spark)
    df = spark.table("t").selectExpr("slow(a) AS a")
    assert held_while(spark, df.collect, [S(T)]) == sorted([D, S(T), S(P1)])


@pytest.mark.parametrize(
    "action", ["foreach", "foreachPartition", "rdd.count", "rdd.map.collect", "toLocalIterator"]
)
def test_rdd_actions_check_the_locks_but_do_not_hold_them(spark, action):
    """df.rdd (foreach, foreachPartition, df.rdd.*) runs with no SQL execution, and
    toLocalIterator's execution ends before the rows are pulled: their locks are checked (a
    conflicting lock fails them) but not held while their jobs run (README: not covered)."""
    fresh(spark)
    other = spark.newSession()
    other.sql("LOCK TABLE t EXCLUSIVE")
    try:
        spark.conf.set("spark.sparklock.lock.numRetries", "1")
        with pytest.raises(Exception, match="LOCK_CONFLICT"):
            ACTIONS[action](spark.table("t"))
    finally:
        spark.conf.unset("spark.sparklock.lock.numRetries")
        other.sql("UNLOCK TABLE t")
    ACTIONS[action](spark.table("t"))


# -- two statements crossing: sorted, all-or-nothing lock sets never deadlock -------------------
def test_crossing_inserts_never_deadlock(spark):
    for s in (
        "DROP TABLE IF EXISTS xa",
        "DROP TABLE IF EXISTS xb",
        "CREATE TABLE xa (k INT) USING parquet",
        "CREATE TABLE xb (k INT) USING parquet",
        "INSERT INTO xa VALUES (1)",
        "INSERT INTO xb VALUES (2)",
    ):
        spark.sql(s)
    rounds = 6
    done = {"ab": 0, "ba": 0}
    errors: list = []

    def loop(key, statement):
        session = spark.newSession()
        try:
            for _ in range(rounds):
                session.sql(statement)
                done[key] += 1
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [
        threading.Thread(target=loop, args=("ab", "INSERT INTO xa SELECT * FROM xb LIMIT 1")),
        threading.Thread(target=loop, args=("ba", "INSERT INTO xb SELECT * FROM xa LIMIT 1")),
    ]
    start = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join(180)
    assert not any(th.is_alive() for th in threads), "deadlock: a writer never finished"
    assert not errors, errors
    assert done == {"ab": rounds, "ba": rounds}
    assert time.monotonic() - start < 180
    assert spark.table("xa").count() == 1 + rounds and spark.table("xb").count() == 1 + rounds
