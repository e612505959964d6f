"""Tables of a catalog other than the session catalog are locked like Hive's, end to end.

The catalog is Spark's own JDBC catalog on the in-memory Derby that ships in pyspark's jars (no
download): a generic v2 catalog, nothing Iceberg-shaped. EXPLAIN LOCKS names ``jdb.x.t`` as
written, LOCK TABLE on it keeps another session's INSERT out, SHOW LOCKS lists it, on the
embedded manager and on ZooKeeper (whose znodes for it Hive cannot take for its own).

One ``local[2]`` session for the module; each test makes its own sessions of it.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.support.sessions import conf_for_manager, new_session
from tests.support.spark import SparkSpec

pytestmark = [pytest.mark.spark]

S, X = "SHARED", "EXCLUSIVE"
JDB = "spark.sql.catalog.jdb"
SPARK = SparkSpec(
    app="catalog-locks",
    conf={
        JDB: "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog",
        JDB + ".url": "jdbc:derby:memory:sparklock_catalogs;create=true",
        JDB + ".driver": "org.apache.derby.jdbc.EmbeddedDriver",
    },
    setup_sql=(
        "CREATE NAMESPACE IF NOT EXISTS jdb.x",
        "CREATE TABLE jdb.x.t (id INT)",
        "CREATE TABLE jdb.x.s (id INT)",
        "INSERT INTO jdb.x.s VALUES (1), (2)",
    ),
)
#: a conflicting statement gives up after about a tenth of a second
IMPATIENT = {"spark.sparklock.lock.numRetries": "2", "spark.sparklock.lock.retryInterval": "50ms"}
ANCESTORS = [("jdb.", S), ("jdb.x.", S)]


def rows(session: SparkSession, statement: str) -> list[tuple[str, str]]:
    return sorted((r[0], r[1]) for r in session.sql(statement).collect())


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("SELECT * FROM jdb.x.t", [*ANCESTORS, ("jdb.x.t", S)]),
        ("INSERT INTO jdb.x.t SELECT * FROM jdb.x.s", [*ANCESTORS, ("jdb.x.s", S), ("jdb.x.t", X)]),
        (
            "INSERT OVERWRITE jdb.x.t SELECT * FROM jdb.x.s",
            [*ANCESTORS, ("jdb.x.s", S), ("jdb.x.t", X)],
        ),
        ("CREATE TABLE jdb.x.n (id INT)", [*ANCESTORS, ("jdb.x.n", X)]),
        ("DROP TABLE jdb.x.t", [*ANCESTORS, ("jdb.x.t", X)]),
        ("DROP NAMESPACE jdb.x", [("jdb.", S), ("jdb.x.", X)]),
        (
            "CREATE TABLE jdb.x.c AS SELECT * FROM jdb.x.s",
            [*ANCESTORS, ("jdb.x.c", X), ("jdb.x.s", S)],
        ),
    ],
)
def test_explain_locks_names_catalog_tables_as_written(spark, statement, expected):
    assert rows(spark, "EXPLAIN LOCKS " + statement) == expected


def test_use_catalog_resolves_unqualified_names(spark):
    session = spark.newSession()
    session.sql("USE jdb.x")
    assert rows(session, "EXPLAIN LOCKS SELECT * FROM t") == [*ANCESTORS, ("jdb.x.t", S)]
    session.sql("LOCK TABLE t SHARED")
    try:
        assert rows(session, "SHOW LOCKS") == [("jdb.x.t", S)]
    finally:
        session.sql("UNLOCK TABLE t")
    assert rows(session, "SHOW LOCKS") == []


def test_lock_table_needs_the_catalog_table_to_exist(spark):
    with pytest.raises(Exception, match="(?i)not.*found|TABLE_OR_VIEW_NOT_FOUND|NoSuchTable"):
        spark.sql("LOCK TABLE jdb.x.missing EXCLUSIVE")


@pytest.mark.parametrize("manager", ["embedded", "zookeeper"])
def test_lock_table_keeps_another_sessions_insert_out(spark, request, manager):
    conf = conf_for_manager(manager, lambda: request.getfixturevalue("zk_server").address, "cat_")
    holder = new_session(spark, conf)
    writer = new_session(spark, {**conf, **IMPATIENT})
    before = writer.sql("SELECT count(*) FROM jdb.x.t").collect()[0][0]
    holder.sql("LOCK TABLE jdb.x.t EXCLUSIVE")
    try:
        assert rows(writer, "SHOW LOCKS") == [("jdb.x.t", X)]
        assert rows(writer, "SHOW LOCKS jdb.x.t") == [("jdb.x.t", X)]
        with pytest.raises(Exception) as info:
            writer.sql("INSERT INTO jdb.x.t VALUES (7)")
        if manager == "zookeeper":
            zk = request.getfixturevalue("zk")
            ns = conf["spark.sparklock.zookeeper.namespace"]
            # one node per level, each scope level ending with "." (no Hive database name can)
            assert "jdb." in zk.get_children(f"/{ns}")
            locks = zk.get_children(f"/{ns}/jdb./x./t")
            assert [n.rsplit("-", 1)[0] for n in locks] == ["LOCK-EXCLUSIVE"]
    finally:
        holder.sql("UNLOCK TABLE jdb.x.t")
    message = str(info.value)
    assert "LOCK_CONFLICT" in message and "jdb.x.t" in message, message
    assert writer.sql("SELECT count(*) FROM jdb.x.t").collect()[0][0] == before  # never ran
    assert rows(writer, "SHOW LOCKS") == []
    writer.sql("INSERT INTO jdb.x.t VALUES (7)")  # free again
    assert writer.sql("SELECT count(*) FROM jdb.x.t").collect()[0][0] == before + 1


def test_lock_database_takes_a_catalog_namespace(spark):
    holder = new_session(spark, {})
    reader = new_session(spark, IMPATIENT)
    holder.sql("LOCK DATABASE jdb.x EXCLUSIVE")
    try:
        assert rows(reader, "SHOW LOCKS DATABASE jdb.x") == [("jdb.x.", X)]
        with pytest.raises(Exception, match="LOCK_CONFLICT") as info:
            reader.sql("SELECT * FROM jdb.x.s").collect()
        assert "jdb.x." in str(info.value)
    finally:
        holder.sql("UNLOCK DATABASE jdb.x")
    assert reader.sql("SELECT * FROM jdb.x.s").count() == 2
    with pytest.raises(Exception, match="(?i)namespace|schema|not.*found|exist"):
        spark.sql("LOCK DATABASE jdb.missing SHARED")
