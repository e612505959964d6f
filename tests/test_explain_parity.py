"""Spark unchanged where sparklock has nothing to say: EXPLAIN, cached plans, EXPLAIN LOCKS.

* ``EXPLAIN``, ``EXPLAIN EXTENDED`` and ``EXPLAIN FORMATTED`` (subqueries, joins, a command, a
  cached table) print exactly what a plain Spark session prints, compared with a real Spark
  without sparklock in a second process (``tests.support.plain_spark``). Only what differs by
  construction between two processes is normalised: the warehouse path, object identities,
  expression ids and plan ids (renumbered in order of appearance, so the references between them
  must still match).
* A cached table's plan carries no lock node, and a query that reads it keeps its adaptive plan;
  it is still locked at its own root.
* ``EXPLAIN LOCKS`` of each statement form Spark executes while analysing it (EXECUTE IMMEDIATE
  with its variants) or that changes the session (variables, confs, the current database, the
  cache, temporary views) leaves no trace, and lists the locks the statement itself would take.
  CALL is covered in ``test_command_coverage.py``.
"""

from __future__ import annotations

import re

import pytest
from pyspark.sql import SparkSession  # noqa: E402

from tests.support import plain_spark  # noqa: E402
from tests.support.spark import WAREHOUSE_KEY, SparkSpec  # noqa: E402
from tests.support.spark_versions import SPARK_LINE, needs_spark  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("unlock_leftover_locks")]

SETUP = (
    # whole locations in both sessions: Spark cuts them at 100 characters, and the two
    # warehouses' paths differ in length (the temporary directories of parallel test processes)
    "SET spark.sql.maxMetadataStringLength=10000",
    "CREATE TABLE x (a INT) USING parquet",
    "CREATE TABLE y (a INT, b INT) USING parquet",
    "CREATE TABLE c (a INT, p STRING) USING parquet",
    "INSERT INTO x VALUES (1), (2)",
    "INSERT INTO y VALUES (1, 10), (3, 30)",
    "INSERT INTO c VALUES (1, 'a'), (2, 'b')",
    "CREATE DATABASE other",
    "CACHE TABLE c",
    "CACHE TABLE agg AS SELECT p, count(*) AS n FROM c GROUP BY p",
)


def _declare_variables(spark: SparkSession) -> None:
    if SPARK_LINE >= (4, 0):  # session variables: Spark 4.0+
        spark.sql("DECLARE VARIABLE v INT DEFAULT 0")
        spark.sql("DECLARE VARIABLE stmt STRING DEFAULT 'INSERT INTO x VALUES(?)'")


SPARK = SparkSpec(app="explain-parity", setup=_declare_variables, setup_sql=SETUP)

QUERIES = {
    "scalar-subqueries": (
        "SELECT a, (SELECT max(b) FROM y) AS m FROM x WHERE a > (SELECT min(a) FROM y)"
    ),
    "in-subquery": "SELECT * FROM x WHERE a IN (SELECT a FROM y WHERE b > 5)",
    "join": "SELECT x.a, count(*) FROM x JOIN y ON x.a = y.a GROUP BY x.a",
    "insert": "INSERT INTO x SELECT a FROM y",
    "cached-scan": "SELECT * FROM c WHERE a > 0",
    "cached-with-subquery": "SELECT * FROM c WHERE a = (SELECT max(a) FROM x)",
    "cached-aggregate": "SELECT * FROM agg WHERE n > 0",
}
MODES = ("", "EXTENDED", "FORMATTED")
STATEMENTS = [
    f"EXPLAIN {mode} {query}".replace("  ", " ") for query in QUERIES.values() for mode in MODES
]


def normalised(text: str, warehouse: str) -> str:
    """``text`` with the warehouse path, object identities (Spark 3.5 prints the cache's
    serializer as ``Class@hash``) and the per-process ids renumbered by first appearance."""
    text = text.replace(warehouse.rstrip("/"), "<warehouse>")
    text = re.sub(r"(?<=[A-Za-z])@[0-9a-f]{1,8}\b", "@<object>", text)
    numbering: dict[tuple[str, str], int] = {}

    def renumber(m: re.Match[str]) -> str:
        key = (m.group(1), m.group(2))
        numbering.setdefault(key, sum(1 for k in numbering if k[0] == key[0]))
        return f"{m.group(1)}{numbering[key]}"

    return re.sub(r"(#|plan_id=)(\d+)", renumber, text)


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> dict[str, str]:
    """Each EXPLAIN statement as Spark without sparklock prints it, normalised."""
    warehouse = tmp_path_factory.mktemp("plain") / "warehouse"
    outputs = plain_spark.run(SETUP, STATEMENTS, warehouse)
    return {s: normalised(out, str(warehouse)) for s, out in zip(STATEMENTS, outputs, strict=True)}


def explained(spark: SparkSession, statement: str) -> str:
    out = "\n".join(str(r[0]) for r in spark.sql(statement).collect())
    return normalised(out, spark.conf.get(WAREHOUSE_KEY))


# -- EXPLAIN -----------------------------------------------------------------------------------


@pytest.mark.parametrize("statement", STATEMENTS)
def test_explain_prints_what_spark_alone_prints(spark, plain, statement):
    ours = explained(spark, statement)
    assert "SparkLock" not in ours
    assert ours == plain[statement]


def test_the_plain_spark_comparison_can_tell_the_plans_apart(plain):
    """The comparison is not vacuous: different queries print differently, subqueries included."""
    formatted = [plain[s] for s in STATEMENTS if s.startswith("EXPLAIN FORMATTED")]
    assert len(set(formatted)) == len(formatted)
    scalar = plain[f"EXPLAIN FORMATTED {QUERIES['scalar-subqueries']}"]
    assert "===== Subqueries =====" in scalar and "Subquery:2" in scalar


@needs_spark((4, 0), "EXECUTE IMMEDIATE")
def test_a_statement_spark_explain_runs_is_still_locked(spark):
    """Spark's own EXPLAIN runs what EXECUTE IMMEDIATE holds while analysing it; that statement
    runs as an execution of its own and takes its locks, even though EXPLAIN's plan has none."""
    other = spark.newSession()
    other.sql("LOCK TABLE x EXCLUSIVE")
    spark.conf.set("spark.sparklock.lock.numRetries", "1")
    try:
        rows = spark.sql("EXPLAIN EXECUTE IMMEDIATE 'INSERT INTO x VALUES (7)'").collect()
        # Spark's EXPLAIN prints an error of its planning (here: of the INSERT it ran) as its output
        assert "LOCK_CONFLICT" in "\n".join(str(r[0]) for r in rows)
    finally:
        spark.conf.unset("spark.sparklock.lock.numRetries")
        other.sql("UNLOCK TABLE x")
    assert spark.sql("SELECT count(*) FROM x WHERE a = 7").first()[0] == 0


# -- cached plans ----------------------------------------------------------------------------


def test_cached_scan_keeps_adaptive_execution_and_no_lock_node_in_the_cache(spark, plain):
    """Spark plans a scan of a cached adaptive plan adaptively, and so must a locked query."""
    query = QUERIES["cached-aggregate"]
    assert plain[f"EXPLAIN {query}"].startswith("== Physical Plan ==\nAdaptiveSparkPlan")
    df = spark.sql(query)
    assert sorted(tuple(r) for r in df.collect()) == [("a", 1), ("b", 1)]
    root = df._jdf.queryExecution().executedPlan()
    assert root.nodeName() == "SparkLock"  # the statement itself is locked where it runs
    assert root.children().apply(0).nodeName() == "AdaptiveSparkPlan"
    # the tree string includes the cached plan (InMemoryRelation): one lock node, at the root
    assert root.toString().count("SparkLock") == 1


def test_reading_a_cached_table_still_waits_for_its_lock(spark):
    other = spark.newSession()
    other.sql("LOCK TABLE c EXCLUSIVE")
    spark.conf.set("spark.sparklock.lock.numRetries", "1")
    try:
        with pytest.raises(Exception) as refused:
            spark.sql("SELECT * FROM c").collect()
        assert "LOCK_CONFLICT" in str(refused.value)
    finally:
        spark.conf.unset("spark.sparklock.lock.numRetries")
        other.sql("UNLOCK TABLE c")
    assert spark.sql("SELECT count(*) FROM c").first()[0] == 2


# -- EXPLAIN LOCKS runs nothing --------------------------------------------------------------


def trace(spark: SparkSession) -> dict[str, object]:
    """What a statement that ran would have changed: tables, views, rows, variables, confs,
    the current database and the cache."""
    state: dict[str, object] = {
        "tables": sorted((t.name, t.database, t.isTemporary) for t in spark.catalog.listTables()),
        "rows": tuple(
            spark.sql("SELECT (SELECT count(*) FROM x), (SELECT count(*) FROM y)").first()
        ),
        "database": spark.catalog.currentDatabase(),
        "cached": spark.catalog.isCached("y"),
        "conf": sorted(tuple(r) for r in spark.sql("SET").collect()),
    }
    if SPARK_LINE >= (4, 0):
        state["variables"] = tuple(spark.sql("SELECT v, stmt").first())
        try:
            spark.sql("SELECT fresh").collect()
            state["fresh"] = True
        except Exception:
            state["fresh"] = False
    return state


def locks(spark: SparkSession, statement: str) -> list[tuple[str, str]]:
    return sorted((r[0], r[1]) for r in spark.sql("EXPLAIN LOCKS " + statement).collect())


IMMEDIATE = needs_spark((4, 2), "EXECUTE IMMEDIATE taken apart by EXPLAIN LOCKS")
VARIABLES = needs_spark((4, 0), "session variables")

# (statement, the same statement written directly: same locks expected, or a table it must lock)
FORMS = [
    pytest.param(
        "EXECUTE IMMEDIATE 'INSERT INTO x VALUES(?)' USING 1",
        "INSERT INTO x VALUES(1)",
        None,
        marks=IMMEDIATE,
        id="immediate-insert-positional",
    ),
    pytest.param(
        "EXECUTE IMMEDIATE 'INSERT INTO x VALUES(:p)' USING 2 AS p",
        "INSERT INTO x VALUES(2)",
        None,
        marks=IMMEDIATE,
        id="immediate-insert-named",
    ),
    pytest.param(
        "EXECUTE IMMEDIATE stmt USING v",
        "INSERT INTO x VALUES(0)",
        None,
        marks=IMMEDIATE,
        id="immediate-text-and-value-from-variables",
    ),
    pytest.param(
        "EXECUTE IMMEDIATE 'SELECT a FROM x WHERE a = :v' USING v",
        "SELECT a FROM x WHERE a = 0",
        None,
        marks=IMMEDIATE,
        id="immediate-variable-named-by-its-name",
    ),
    pytest.param(
        "EXECUTE IMMEDIATE 'CREATE TEMPORARY VIEW tv2 AS SELECT * FROM x'",
        "CREATE TEMPORARY VIEW tv2 AS SELECT * FROM x",
        None,
        marks=IMMEDIATE,
        id="immediate-temp-view",
    ),
    pytest.param(
        "EXECUTE IMMEDIATE 'SELECT max(a) FROM y' INTO v",
        "SELECT max(a) FROM y",
        None,
        marks=IMMEDIATE,
        id="immediate-into-variable",
    ),
    pytest.param(
        "EXECUTE IMMEDIATE 'DROP TABLE y'",
        "DROP TABLE y",
        None,
        marks=IMMEDIATE,
        id="immediate-drop",
    ),
    pytest.param(
        "EXECUTE IMMEDIATE 'SET VAR v = (SELECT max(a) FROM y)'",
        "SET VAR v = (SELECT max(a) FROM y)",
        None,
        marks=IMMEDIATE,
        id="immediate-set-var",
    ),
    pytest.param(
        "EXECUTE IMMEDIATE 'CACHE TABLE y'",
        "CACHE TABLE y",
        None,
        marks=IMMEDIATE,
        id="immediate-cache",
    ),
    pytest.param("DECLARE VARIABLE fresh INT DEFAULT 5", None, None, marks=VARIABLES, id="declare"),
    pytest.param(
        "SET VAR v = (SELECT max(a) FROM y)", None, "default@y", marks=VARIABLES, id="set-var"
    ),
    pytest.param("SET spark.sql.shuffle.partitions=7", None, None, id="set-conf"),
    pytest.param("USE other", None, None, id="use"),
    pytest.param("CACHE TABLE y", None, "default@y", id="cache"),
    pytest.param("CREATE TEMPORARY VIEW tv2 AS SELECT * FROM x", None, "default@x", id="temp-view"),
    pytest.param("INSERT INTO x VALUES (1)", None, "default@x", id="insert"),
]


@pytest.mark.parametrize(("statement", "direct", "table"), FORMS)
def test_explain_locks_leaves_no_trace_and_lists_the_statements_locks(
    spark, statement, direct, table
):
    before = trace(spark)
    listed = locks(spark, statement)
    if direct is not None:
        assert listed == locks(spark, direct)
        assert listed  # each of these statements locks a table
    if table is not None:
        assert table in [name for name, _ in listed]
    assert trace(spark) == before
    assert spark.sql("SHOW LOCKS").collect() == []


@needs_spark((4, 0), "SQL scripting")
def test_explain_locks_of_a_sql_script_is_refused_and_runs_nothing(spark):
    before = trace(spark)
    with pytest.raises(Exception, match="not a SQL script"):
        spark.sql("EXPLAIN LOCKS BEGIN INSERT INTO x VALUES (9); DROP TABLE y; END").collect()
    assert trace(spark) == before
