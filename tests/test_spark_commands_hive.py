"""The command table for Hive-format tables (``enableHiveSupport()``), on a local Derby metastore.

One session for the module with its own metastore and warehouse in a temporary directory (the jars
come with pyspark: spark-hive, hive-metastore/exec 2.3.10, derby, datanucleus). Hive-format tables
analyse to the Hive command classes (``InsertIntoHiveTable``, ``CreateHiveTableAsSelectCommand`` /
``OptimizedCreateHiveTableAsSelectCommand``, ``CreateTableCommand``, ``LoadDataCommand`` with
real files, SERDE properties); every row's exact ``EXPLAIN LOCKS`` set and, where it runs, the
lock set it really requested.
"""

from __future__ import annotations

from pathlib import Path

import pyspark  # noqa: E402 - a dependency: without it these tests fail, not skip
import pytest

from sparklock.spark.builder import callback_of  # noqa: E402
from tests.support.locks import explain, requested  # noqa: E402
from tests.support.spark import SparkSpec, catalog_partition_specs  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("no_leftover_locks")]

HIVE_JARS = ("spark-hive_", "hive-metastore-", "hive-exec-", "derby-", "datanucleus-core-")


def _missing_jars() -> list[str]:
    names = [p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")]
    return [j for j in HIVE_JARS if not any(n.startswith(j) for n in names)]


if _missing_jars():  # pragma: no cover - every pyspark wheel has them
    pytest.skip(f"pyspark/jars lacks {_missing_jars()}", allow_module_level=True)

D = ("default", "SHARED")


def S(name):  # noqa: N802
    return (name, "SHARED")


def X(name):  # noqa: N802
    return (name, "EXCLUSIVE")


def W(table):  # noqa: N802
    return (f"default@{table}@_sparklock_writers", "EXCLUSIVE")


def _check_hive_catalog(session) -> None:
    assert session.conf.get("spark.sql.catalogImplementation") == "hive"


SPARK = SparkSpec(app="commands-hive", hive=True, setup=_check_hive_catalog)


def fresh(spark):
    for s in (
        "DROP TABLE IF EXISTS h",
        "DROP TABLE IF EXISTS hu",
        "DROP TABLE IF EXISTS hn",
        "DROP TABLE IF EXISTS hl",
        "CREATE TABLE h (a INT) PARTITIONED BY (p STRING) STORED AS PARQUET",
        "CREATE TABLE hu (a INT) STORED AS TEXTFILE",
        "INSERT INTO h PARTITION (p='1') VALUES (1)",
        "INSERT INTO hu VALUES (1)",
    ):
        spark.sql(s)


H, HU, HP1 = "default@h", "default@hu", "default@h@p=1"

ROWS = [
    ("SELECT * FROM h WHERE p = '1'", [D, S(H), S(HP1)]),
    ("SELECT * FROM hu", [D, S(HU)]),
    ("INSERT INTO h PARTITION (p='1') SELECT a FROM hu", [D, S(HU), S(H), X(HP1), W("h")]),
    ("INSERT OVERWRITE TABLE hu SELECT a FROM h", [D, S(H), S(HP1), X(HU), W("hu")]),
    ("CREATE TABLE hn (a INT) STORED AS ORC", [D, X("default@hn")]),
    ("CREATE TABLE hn STORED AS PARQUET AS SELECT a FROM hu", [D, S(HU), X("default@hn")]),
    ("CREATE TABLE hn LIKE h", [D, S(H), X("default@hn")]),
    ("ALTER TABLE hu SET SERDEPROPERTIES ('field.delim'=',')", [D, S(HU)]),
    ("ALTER TABLE h PARTITION (p='1') SET SERDEPROPERTIES ('x'='y')", [D, S(H), S(HP1)]),
    ("ALTER TABLE h ADD PARTITION (p='2')", [D, S(H), X("default@h@p=2")]),
    ("ALTER TABLE h DROP PARTITION (p='1')", [D, S(H), X(HP1)]),
    ("TRUNCATE TABLE h PARTITION (p='1')", [D, S(H), X(HP1)]),
    ("MSCK REPAIR TABLE h", [D, X(H)]),
    ("ANALYZE TABLE h PARTITION (p='1') COMPUTE STATISTICS", [D, S(H), S(HP1)]),
    ("DROP TABLE hu", [D, X(HU)]),
]


@pytest.mark.parametrize("statement,expected", ROWS, ids=[r[0][:60] for r in ROWS])
def test_hive_statement_locks(spark, statement, expected):
    fresh(spark)
    assert explain(spark, statement) == sorted(expected)
    got = requested(spark, lambda: spark.sql(statement).collect())
    assert got and got[0] == sorted(expected), got


def test_load_data_like_insert(spark, warehouse):
    fresh(spark)
    src = warehouse.parent / "load.txt"
    src.write_text("7\n8\n")
    into_part = f"LOAD DATA LOCAL INPATH '{src}' INTO TABLE h PARTITION (p='3')"
    into_table = f"LOAD DATA LOCAL INPATH '{src}' OVERWRITE INTO TABLE hu"
    assert explain(spark, into_part) == sorted([D, S(H), X("default@h@p=3")])
    assert explain(spark, into_table) == sorted([D, X(HU)])
    assert requested(spark, lambda: spark.sql(into_table)) == [sorted([D, X(HU)])]
    assert spark.table("hu").count() == 2


def test_full_read_names_every_partition_as_the_metastore_holds_it(spark):
    """With a Hive metastore a full read asks for partition names only (no storage descriptor
    per partition): the specs are exactly those the metastore's partitions hold."""
    spark.sql("DROP TABLE IF EXISTS hodd")
    spark.sql("CREATE TABLE hodd (v INT) PARTITIONED BY (s STRING, n INT) STORED AS PARQUET")
    try:
        spark.sql("SET hive.exec.dynamic.partition.mode=nonstrict")
        spark.sql(
            "INSERT INTO hodd PARTITION (s, n) VALUES (1, 'a/b', 1), (2, 'x=y', 2), "
            "(3, '50%', NULL), (4, 'c:d', 4), (5, 'ü', 5), (6, NULL, 6)"
        )
        with callback_of(spark).recording() as recorded:
            assert spark.sql("SELECT count(*) FROM hodd").collect()[0][0] == 6
        reads = [r for f in recorded for r in f.reads if getattr(r, "table", None) == "hodd"]
        expected = catalog_partition_specs(spark, "hodd")
        key = lambda spec: sorted((k, str(v)) for k, v in spec.items())  # noqa: E731
        assert len(expected) == 6
        assert sorted(map(dict, reads[0].partitions), key=key) == sorted(expected, key=key)
    finally:
        spark.sql("DROP TABLE IF EXISTS hodd")


def _truncated(session, table: str, fmt: str) -> tuple:
    """What a run of TRUNCATEs leaves of ``table``: rows per partition, the catalog's
    partitions, the table's statistics, and the error of a missing partition."""
    session.sql(f"DROP TABLE IF EXISTS {table}")
    session.sql(f"CREATE TABLE {table} (v INT, s STRING, n INT) {fmt} PARTITIONED BY (s, n)")
    session.sql("SET hive.exec.dynamic.partition.mode=nonstrict")
    session.sql(
        f"INSERT INTO {table} VALUES (1, 'a/b', 1), (2, 'a/b', 2), (3, 'x=y', 2), "
        "(4, '50%', NULL), (5, NULL, 6), (6, 'keep', 7)"
    )
    session.sql(f"ANALYZE TABLE {table} COMPUTE STATISTICS")
    seen = []

    def look() -> None:
        rows = session.sql(f"SELECT s, n, count(*) FROM {table} GROUP BY s, n").collect()
        parts = session.sql(f"SHOW PARTITIONS {table}").collect()
        described = session.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
        stats = [r[1] for r in described if r[0] == "Statistics"]
        seen.append((sorted(map(tuple, rows), key=str), sorted(map(tuple, parts)), stats))

    session.sql(f"TRUNCATE TABLE {table} PARTITION (S='a/b')")  # partial, in another case
    look()
    session.sql(f"TRUNCATE TABLE {table}")
    look()
    try:
        session.sql(f"TRUNCATE TABLE {table} PARTITION (s='none', n=9)")
        seen.append("no error")
    except Exception as e:  # noqa: BLE001 - Spark's own error is part of the outcome
        seen.append(type(e).__name__)
    session.sql(f"INSERT INTO {table} VALUES (7, 'keep', 7)")
    look()
    session.sql(f"DROP TABLE {table}")
    return tuple(seen)


@pytest.mark.parametrize("fmt", ["STORED AS PARQUET", "USING parquet"], ids=["hive", "datasource"])
def test_truncate_of_many_partitions_ends_as_spark_s_own(spark, fmt):
    """A TRUNCATE that deletes more than one partition runs Spark's command once per partition
    (the lease checked before each, tests/test_fencing_destructive.py): what it leaves must be
    what Spark's single command leaves (a session with sparklock off): rows, the catalog's
    partitions (kept, empty), the statistics, the error for a missing partition. A partial spec
    in another case, and odd values: a slash, '=', '%', NULL."""
    free = spark.newSession()
    free.conf.set("spark.sparklock.enabled", "false")
    split = spark._jvm.io.sparklock.shim.write.CheckedTruncate
    before = split.partitionsTruncated()
    ours = _truncated(spark, "htr_locked", fmt)
    assert split.partitionsTruncated() - before == 2 + 6, "not run one partition at a time"
    assert ours[0][0] != ours[1][0], "the whole-table TRUNCATE left the rows as they were"
    assert ours == _truncated(free, "htr_free", fmt)
