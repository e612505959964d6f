"""The command table for Hive-format tables (``enableHiveSupport()``), on a local Derby metastore.

One session for the module with its own metastore and warehouse in a temporary directory (the jars
come with pyspark: spark-hive, hive-metastore/exec 2.3.10, derby, datanucleus). Hive-format tables
analyse to the Hive command classes (``InsertIntoHiveTable``, ``CreateHiveTableAsSelectCommand`` /
``OptimizedCreateHiveTableAsSelectCommand``, ``CreateTableCommand``, ``LoadDataCommand`` with
real files, SERDE properties); every row's exact ``EXPLAIN LOCKS`` set and, where it runs, the
lock set it really requested.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

import sparklock  # noqa: E402
from sparklock.managers import get_manager  # noqa: E402
from sparklock.service import LockService, config_of, get_service  # noqa: E402
from sparklock.spark.builder import callback_of  # noqa: E402

pytestmark = pytest.mark.spark

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


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    active = SparkSession.getActiveSession()
    if active is not None:  # another module's session: one SparkContext per process
        active.stop()
    root = tmp_path_factory.mktemp("hive")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("sparklock-commands-hive")
        .config("spark.sql.warehouse.dir", str(root / "warehouse"))
        .config(
            "spark.hadoop.javax.jdo.option.ConnectionURL",
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true",
        )
        .config("spark.hadoop.datanucleus.schema.autoCreateAll", "true")
        .config("spark.hadoop.hive.metastore.schema.verification", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .enableHiveSupport()
    )
    session = sparklock.configure(builder).getOrCreate()
    # before the metastore client starts (lazily, on first catalog use): Derby's log in tmp too
    session._jvm.java.lang.System.setProperty("derby.stream.error.file", str(root / "derby.log"))
    session.sparkContext.setLogLevel("ERROR")
    assert session.conf.get("spark.sql.catalogImplementation") == "hive"
    session._sparklock_root = root
    yield session
    session.stop()


def held() -> list[tuple[str, str]]:
    return sorted((i.name, i.mode.value) for i in get_manager(config_of({})).list_locks(None))


@pytest.fixture(autouse=True)
def no_leftover_locks(spark):
    yield
    deadline = time.monotonic() + 10
    while (held() or get_service().open_handles()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert held() == [] and get_service().open_handles() == 0


def explain(spark, statement):
    return sorted((r[0], r[1]) for r in spark.sql("EXPLAIN LOCKS " + statement).collect())


def requested(spark, action):
    with callback_of(spark).recording() as recorded:
        action()
    return [sorted(LockService().explain(f)) for f in recorded if not f.enclosing_handles]


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


def test_load_data_like_insert(spark):
    fresh(spark)
    src = spark._sparklock_root / "load.txt"
    src.write_text("7\n8\n")
    into_part = f"LOAD DATA LOCAL INPATH '{src}' INTO TABLE h PARTITION (p='3')"
    into_table = f"LOAD DATA LOCAL INPATH '{src}' OVERWRITE INTO TABLE hu"
    assert explain(spark, into_part) == sorted([D, S(H), X("default@h@p=3")])
    assert explain(spark, into_table) == sorted([D, X(HU)])
    assert requested(spark, lambda: spark.sql(into_table)) == [sorted([D, X(HU)])]
    assert spark.table("hu").count() == 2
