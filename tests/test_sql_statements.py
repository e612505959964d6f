"""The lock statements as real Spark SQL (parser extension + eager commands), end to end.

SHOW LOCKS / LOCK / UNLOCK TABLE|DATABASE / EXPLAIN LOCKS are parsed by
``io.sparklock.shim.statements.LockStatementParser`` (Spark's own parser reads the identifiers,
partition specs and the explained statement), resolved through the session catalog by
``LockStatementCommand`` and answered by ``sparklock.service`` over the bridge. One local Spark
session for the module, parquet tables in a temporary warehouse, the default embedded manager.
"""

from __future__ import annotations

import json

import pytest
from pyspark.errors import AnalysisException, ParseException  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

from sparklock import telemetry  # noqa: E402
from sparklock.protocol import messages  # noqa: E402
from sparklock.spark.builder import callback_of  # noqa: E402
from tests.support.contract import assert_records_match  # noqa: E402
from tests.support.show_locks_columns import BASIC, EXPLAIN, EXTENDED  # noqa: E402
from tests.support.spark import SparkSpec  # noqa: E402
from tests.support.spark_versions import needs_spark  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("unlock_leftover_locks")]


# Partition values that need Hive's escaping, and the display names Hive gives them.
ODD_VALUES = {
    "a/b": "a%2Fb",
    "x y": "x y",
    "it's": "it%27s",
    "k=v": "k%3Dv",
    "é": "é",
    '"q"': "%22q%22",
}


def sql_string(value: str) -> str:
    """A Spark SQL string literal for ``value``."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _create_tables(spark: SparkSession) -> None:
    spark.sql("CREATE TABLE plain (a INT) USING parquet")
    spark.sql("INSERT INTO plain VALUES (1)")
    spark.sql("CREATE TABLE parts (a INT, p STRING, q STRING) USING parquet PARTITIONED BY (p, q)")
    rows = [(i, v, "1") for i, v in enumerate(ODD_VALUES)] + [(99, "a/b", "2")]
    spark.createDataFrame(rows, "a INT, p STRING, q STRING").write.insertInto("parts")
    spark.sql("CREATE DATABASE MixedDb")
    spark.sql("CREATE TABLE MixedDb.MixedT (a INT, `Pc` STRING) USING parquet PARTITIONED BY (Pc)")
    spark.sql("INSERT INTO MixedDb.MixedT VALUES (1, 'v')")
    spark.sql("CREATE TEMPORARY VIEW tv AS SELECT 1 AS a")


SPARK = SparkSpec(app="sql-statements", setup=_create_tables)


def rows(spark: SparkSession, statement: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(statement).collect()]


def names(spark: SparkSession, statement: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in spark.sql(statement).collect()]


# -- statement forms and columns ---------------------------------------------------------------


def test_show_locks_forms_and_columns(spark):
    """Every SHOW LOCKS form parses, runs, and has the documented string columns."""
    forms = {
        "SHOW LOCKS": BASIC,
        "SHOW LOCKS EXTENDED": EXTENDED,
        "SHOW LOCKS parts": BASIC,
        "SHOW LOCKS parts EXTENDED": EXTENDED,
        "SHOW LOCKS parts PARTITION (p='a/b', q='1')": BASIC,
        "SHOW LOCKS parts PARTITION (p='a/b') EXTENDED": EXTENDED,
        "SHOW LOCKS DATABASE default": BASIC,
        "SHOW LOCKS DATABASE default EXTENDED": EXTENDED,
        "SHOW LOCKS SCHEMA mixeddb": BASIC,
    }
    for statement, columns in forms.items():
        df = spark.sql(statement)
        assert df.columns == columns, statement
        assert {f.dataType.typeName() for f in df.schema.fields} == {"string"}, statement
        assert df.collect() == [], statement


def test_lock_show_unlock_table_round_trip(spark):
    statement = "LOCK TABLE plain SHARED"
    assert spark.sql(statement).columns == []
    assert names(spark, "SHOW LOCKS plain") == [("default@plain", "SHARED")]
    assert names(spark, "SHOW LOCKS") == [("default@plain", "SHARED")]

    [row] = rows(spark, "SHOW LOCKS plain EXTENDED")
    name, mode, query_id, lock_time, lock_type, query_string, client, user = row[:8]
    # A PySpark program's user is its Spark user (the OS user unless SPARK_USER says otherwise).
    assert user == spark.sparkContext.sparkUser()
    assert (name, mode, lock_type, query_string) == (
        "default@plain",
        "SHARED",
        "EXPLICIT",
        statement,
    )
    assert query_id and client
    assert lock_time.isdigit() and int(lock_time) > 1_600_000_000_000  # epoch millis, as text

    spark.sql("UNLOCK TABLE plain")
    assert rows(spark, "SHOW LOCKS plain") == []
    assert rows(spark, "SHOW LOCKS") == []


def test_exclusive_table_lock(spark):
    spark.sql("LOCK TABLE plain EXCLUSIVE")
    assert names(spark, "SHOW LOCKS plain") == [("default@plain", "EXCLUSIVE")]
    spark.sql("UNLOCK TABLE plain")
    assert rows(spark, "SHOW LOCKS plain") == []


def test_partition_round_trip_with_hive_escaped_names(spark):
    """Values with quotes, spaces, '/', '=' and unicode lock Hive's escaped partition names."""
    for value in ODD_VALUES:
        spark.sql(f"LOCK TABLE parts PARTITION (p={sql_string(value)}, q='1') EXCLUSIVE")
    expected = sorted((f"default@parts@p={esc}/q=1", "EXCLUSIVE") for esc in ODD_VALUES.values())
    assert sorted(names(spark, "SHOW LOCKS parts")) == expected
    for value, escaped in ODD_VALUES.items():
        shown = names(spark, f"SHOW LOCKS parts PARTITION (p={sql_string(value)}, q='1')")
        assert shown == [(f"default@parts@p={escaped}/q=1", "EXCLUSIVE")], value
    for value in ODD_VALUES:
        spark.sql(f"UNLOCK TABLE parts PARTITION (p={sql_string(value)}, q='1')")
    assert rows(spark, "SHOW LOCKS parts") == []


def test_partition_spec_order_prefix_and_literals(spark):
    """Spec columns are put in partition-column order; a prefix is its own lock object."""
    spark.sql("LOCK TABLE parts PARTITION (q = '2', P = \"a/b\") SHARED")
    assert names(spark, "SHOW LOCKS parts") == [("default@parts@p=a%2Fb/q=2", "SHARED")]
    spark.sql("UNLOCK TABLE parts PARTITION (p = 'a/b', q = 2)")  # a number literal works too

    spark.sql("LOCK TABLE parts PARTITION (p='a/b') SHARED")  # prefix of (p, q): exists
    assert names(spark, "SHOW LOCKS parts PARTITION (p='a/b')") == [
        ("default@parts@p=a%2Fb", "SHARED")
    ]
    # The table and the partition prefix are independent objects.
    spark.sql("LOCK TABLE parts SHARED")
    assert sorted(names(spark, "SHOW LOCKS parts")) == [
        ("default@parts", "SHARED"),
        ("default@parts@p=a%2Fb", "SHARED"),
    ]
    spark.sql("UNLOCK TABLE parts")
    assert names(spark, "SHOW LOCKS parts") == [("default@parts@p=a%2Fb", "SHARED")]
    spark.sql("UNLOCK TABLE parts PARTITION (p='a/b')")
    assert rows(spark, "SHOW LOCKS parts") == []


def test_database_round_trip(spark):
    spark.sql("LOCK DATABASE MixedDb EXCLUSIVE")
    assert names(spark, "SHOW LOCKS DATABASE mixeddb") == [("mixeddb", "EXCLUSIVE")]
    [row] = rows(spark, "SHOW LOCKS DATABASE `MIXEDDB` EXTENDED")
    assert row[4] == "EXPLICIT" and row[5] == "LOCK DATABASE MixedDb EXCLUSIVE"
    spark.sql("UNLOCK DATABASE mixeddb")
    assert rows(spark, "SHOW LOCKS DATABASE mixeddb") == []

    spark.sql("LOCK SCHEMA spark_catalog.mixeddb SHARED")
    assert names(spark, "SHOW LOCKS") == [("mixeddb", "SHARED")]
    spark.sql("UNLOCK SCHEMA mixeddb")
    assert rows(spark, "SHOW LOCKS") == []


def test_two_shared_locks_show_twice_and_one_unlock_clears_both(spark):
    spark.sql("LOCK TABLE plain SHARED")
    spark.sql("LOCK TABLE plain SHARED")
    assert names(spark, "SHOW LOCKS plain") == [("default@plain", "SHARED")] * 2
    spark.sql("UNLOCK TABLE plain")
    assert rows(spark, "SHOW LOCKS plain") == []


def test_unlock_of_unlocked_object_is_not_locked_error(spark):
    for statement in (
        "UNLOCK TABLE plain",
        "UNLOCK TABLE parts PARTITION (p='a/b', q='1')",
        "UNLOCK DATABASE mixeddb",
    ):
        with pytest.raises(Exception, match="NOT_LOCKED") as info:
            spark.sql(statement)
        assert "not locked" in str(info.value), statement


# -- resolution errors -------------------------------------------------------------------------


def test_lock_of_a_missing_table_partition_database_is_a_clear_error(spark):
    """LOCK needs its object to exist (as in Hive)."""
    cases = {
        "LOCK TABLE nosuch SHARED": ("TABLE_OR_VIEW_NOT_FOUND", "`nosuch`"),
        "LOCK TABLE nodb.t SHARED": ("SCHEMA_NOT_FOUND", "`nodb`"),
        "LOCK TABLE parts PARTITION (p='a/b', q='9') SHARED": ("PARTITIONS_NOT_FOUND", "q` = 9"),
        "LOCK DATABASE nodb SHARED": ("SCHEMA_NOT_FOUND", "`nodb`"),
    }
    for statement, (condition, named) in cases.items():
        with pytest.raises(AnalysisException) as info:
            spark.sql(statement)
        message = str(info.value)
        assert condition in message and named in message, (statement, message)
    assert rows(spark, "SHOW LOCKS") == []


def test_show_locks_and_unlock_name_missing_objects_by_name(spark):
    """SHOW LOCKS and UNLOCK take what may be locked, not what exists: nothing is locked on these
    names, so SHOW LOCKS is empty and UNLOCK answers NOT_LOCKED naming the object as written."""
    for statement in (
        "SHOW LOCKS nosuch",
        "SHOW LOCKS nodb.t",
        "SHOW LOCKS parts PARTITION (p='zz')",
        "SHOW LOCKS nosuch PARTITION (p='1')",
        "SHOW LOCKS DATABASE nodb",
    ):
        assert rows(spark, statement) == [], statement
    for statement, named in (
        ("UNLOCK TABLE default.nosuch", "default@nosuch"),
        ("UNLOCK TABLE nodb.t", "nodb@t"),
        ("UNLOCK TABLE parts PARTITION (p='zz')", "default@parts@p=zz"),
        ("UNLOCK DATABASE nodb", "nodb"),
    ):
        with pytest.raises(Exception, match="NOT_LOCKED") as info:
            spark.sql(statement)
        assert named in str(info.value), (statement, str(info.value))


def test_partition_spec_errors_name_column_and_table(spark):
    with pytest.raises(AnalysisException) as info:
        spark.sql("LOCK TABLE parts PARTITION (p='a/b', nope='1') SHARED")
    message = str(info.value)
    assert "NON_PARTITION_COLUMN" in message and "`nope`" in message
    assert "`default`.`parts`" in message and "`p`, `q`" in message

    with pytest.raises(AnalysisException, match=r"`a`.*`default`\.`plain` is not partitioned"):
        spark.sql("SHOW LOCKS plain PARTITION (a=1)")

    # (q) alone names no partition or prefix of (p, q).
    with pytest.raises(AnalysisException, match=r"`p` is missing") as info:
        spark.sql("LOCK TABLE parts PARTITION (q='1') SHARED")
    assert "`default`.`parts`" in str(info.value)

    with pytest.raises(ParseException, match="DUPLICATE_KEY"):
        spark.sql("LOCK TABLE parts PARTITION (p='a/b', p='x y') SHARED")
    assert rows(spark, "SHOW LOCKS") == []


def test_temp_views_are_refused_other_catalogs_resolved_by_name(spark):
    with pytest.raises(AnalysisException, match="EXPECT_TABLE_NOT_VIEW.*`tv`"):
        spark.sql("LOCK TABLE tv SHARED")
    # Only the conf entry makes `other` a catalog name: SHOW LOCKS and UNLOCK name its table
    # without loading the plugin (a lock in it stays visible); LOCK needs the table, so loads it.
    spark.conf.set("spark.sql.catalog.other", "org.example.NoSuchCatalog")
    try:
        assert rows(spark, "SHOW LOCKS other.db.t") == []
        with pytest.raises(Exception, match="CANNOT_LOAD_CATALOG|NoSuchCatalog"):
            spark.sql("LOCK TABLE other.db.t SHARED")
    finally:
        spark.conf.unset("spark.sql.catalog.other")


# -- identifiers and lexical tolerance ---------------------------------------------------------


def test_identifier_spellings_name_the_same_object(spark):
    """Mixed case, backticks, db.t and spark_catalog.db.t all resolve to one lock object."""
    spark.sql("LOCK TABLE `MixedDb`.`MixedT` PARTITION (`PC`='v') SHARED")
    spark.sql("LOCK TABLE MIXEDDB.mixedt SHARED")
    expected = [("mixeddb@mixedt", "SHARED"), ("mixeddb@mixedt@pc=v", "SHARED")]
    for spelling in (
        "mixeddb.mixedt",
        "`MIXEDDB`.MixedT",
        "spark_catalog.MixedDb.`mixedt`",
        "SPARK_CATALOG.`mixeddb`.`MIXEDT`",
    ):
        assert sorted(names(spark, f"SHOW LOCKS {spelling}")) == expected, spelling
    assert names(spark, "SHOW LOCKS mixeddb.mixedt PARTITION (pc = 'v')") == [expected[1]]
    spark.sql("UNLOCK TABLE spark_catalog.mixeddb.MIXEDT PARTITION (Pc='v')")
    spark.sql("UNLOCK TABLE `mixeddb`.`mixedt`")
    assert rows(spark, "SHOW LOCKS DATABASE mixeddb") == []

    spark.sql("USE mixeddb")
    try:
        spark.sql("LOCK TABLE MixedT SHARED")  # the current database is the default
        assert names(spark, "SHOW LOCKS") == [("mixeddb@mixedt", "SHARED")]
        spark.sql("UNLOCK TABLE mixedt")
    finally:
        spark.sql("USE default")


def test_keywords_comments_whitespace_and_semicolons(spark):
    spark.sql(
        "  /* leading /* nested */ comment */ -- and a line comment\n"
        "  lock\tTable\n parts   partition ( p = 'a/b' , q = '1' )\n ExClUsIvE ;  "
    )
    assert names(spark, "show locks parts partition(p='a/b',q='1');") == [
        ("default@parts@p=a%2Fb/q=1", "EXCLUSIVE")
    ]
    # The query string is the statement itself, without the comments and semicolons around it.
    [row] = rows(spark, "SHOW LOCKS parts EXTENDED ;; -- trailing comment")
    assert (
        " ".join(row[5].split()) == "lock Table parts partition ( p = 'a/b' , q = '1' ) ExClUsIvE"
    )
    spark.sql("Unlock TABLE parts PARTITION (p='a/b', q='1') -- done\n;")
    assert rows(spark, "SHOW LOCKS /* all */ EXTENDED;") == []


@pytest.mark.parametrize(
    "statement, fragment",
    [
        ("LOCK TABLE plain FOO", "'FOO': expected PARTITION (...), SHARED or EXCLUSIVE"),
        ("SHOW LOCKS parts PARTITION (", "missing ')'"),
        ("SHOW LOCKS parts PARTITION (p='a/b'", "missing ')'"),
        ("LOCK TABLE plain", "end of input: expected PARTITION (...), SHARED or EXCLUSIVE"),
        ("LOCK plain SHARED", "expected TABLE or DATABASE after LOCK"),
        ("UNLOCK DATABASE", "expected a database name"),
        ("UNLOCK TABLE plain SHARED", "expected PARTITION (...) or the end of the statement"),
        ("SHOW LOCKS plain EXTENDED EXTENDED", "expected the end of the statement"),
        ("SHOW LOCKS parts PARTITION p='a/b'", "expected '(' after PARTITION"),
        ("SHOW LOCKS parts PARTITION (p)", "EMPTY_PARTITION_VALUE"),
        ("SHOW LOCKS parts PARTITION (p=)", "PARSE_SYNTAX_ERROR"),
        ("LOCK TABLE parts PARTITION (p='a/b) SHARED", "unclosed string literal"),
        ("LOCK TABLE `plain SHARED", "unclosed backquoted identifier"),
        ("SHOW LOCKS /* never closed", "unclosed bracketed comment"),
        ("LOCK DATABASE default", "expected SHARED or EXCLUSIVE"),
        ("EXPLAIN LOCKS", "expected a statement after EXPLAIN LOCKS"),
        ("EXPLAIN LOCKS SELEC 1", "'SELEC'"),
        ("EXPLAIN LOCKS LOCK TABLE plain SHARED", "LOCK is itself a lock statement"),
    ],
)
def test_malformed_statements_are_parse_errors(spark, statement, fragment):
    with pytest.raises(ParseException) as info:
        spark.sql(statement)
    message = str(info.value)
    assert fragment in message, message
    assert "== SQL ==" in message and statement in message  # positioned on the user's text


def test_parse_error_points_at_the_offending_token(spark):
    with pytest.raises(ParseException) as info:
        spark.sql("LOCK TABLE parts\n  PARTITION (p='a/b',\n  q=) SHARED")
    message = str(info.value)
    assert "(line 3, pos 4)" in message
    assert "\n----^^^" in message


def test_other_sql_goes_to_spark_untouched(spark):
    assert rows(spark, "SELECT 'LOCK TABLE plain SHARED' AS s") == [("LOCK TABLE plain SHARED",)]
    assert rows(spark, "/* SHOW LOCKS */ SELECT count(*) FROM plain") == [(1,)]
    assert "plain" in [r.tableName for r in spark.sql("SHOW TABLES").collect()]
    assert spark.sql("EXPLAIN SELECT * FROM plain").count() == 1
    with pytest.raises(ParseException):  # Spark's own error, not ours
        spark.sql("SHOW LOCKZ")


# -- EXPLAIN LOCKS ---------------------------------------------------------------------------


def test_explain_locks_of_select_and_insert_runs_nothing_and_holds_nothing(spark):
    df = spark.sql("EXPLAIN LOCKS SELECT * FROM parts WHERE p = 'x y'")
    assert df.columns == EXPLAIN
    read = names(spark, "EXPLAIN LOCKS SELECT * FROM parts WHERE p = 'x y'")
    assert ("default@parts", "SHARED") in read
    assert ("default@parts@p=x y/q=1", "SHARED") in read
    assert all(mode == "SHARED" for _, mode in read)

    before = spark.table("parts").count()
    write = names(spark, "EXPLAIN LOCKS INSERT INTO parts PARTITION (p='new', q='1') VALUES (7)")
    assert ("default@parts@p=new/q=1", "EXCLUSIVE") in write
    assert ("default@parts", "SHARED") in write
    assert spark.table("parts").count() == before  # the INSERT was not run
    assert rows(spark, "SHOW PARTITIONS parts PARTITION (p='new')") == []
    assert rows(spark, "SHOW LOCKS") == []  # and nothing is held

    overwrite = names(spark, "explain locks\n INSERT OVERWRITE TABLE plain SELECT 1;")
    assert ("default@plain", "EXCLUSIVE") in overwrite
    assert spark.table("plain").count() == 1


def test_explain_locks_of_ddl_does_not_run_it(spark):
    assert ("default@plain", "EXCLUSIVE") in names(spark, "EXPLAIN LOCKS DROP TABLE plain")
    ctas = names(spark, "EXPLAIN LOCKS CREATE TABLE made USING parquet AS SELECT * FROM plain")
    assert ("default@made", "EXCLUSIVE") in ctas and ("default@plain", "SHARED") in ctas
    tables = {r.tableName for r in spark.sql("SHOW TABLES").collect()}
    assert "plain" in tables and "made" not in tables
    assert rows(spark, "SHOW LOCKS") == []


def test_null_partition_value_is_hives_default_partition(spark):
    spark.sql("CREATE TABLE nullparts (a INT, p STRING) USING parquet PARTITIONED BY (p)")
    try:
        spark.sql("INSERT INTO nullparts VALUES (1, NULL)")
        spark.sql("LOCK TABLE nullparts PARTITION (p = NULL) SHARED")
        assert names(spark, "SHOW LOCKS nullparts") == [
            ("default@nullparts@p=__HIVE_DEFAULT_PARTITION__", "SHARED")
        ]
        spark.sql("UNLOCK TABLE nullparts PARTITION (p = NULL)")
        assert rows(spark, "SHOW LOCKS nullparts") == []
    finally:
        spark.sql("DROP TABLE nullparts")


@needs_spark((4, 1), "EXPLAIN LOCKS with parameter markers (parsePlanWithParameters)")
def test_explain_locks_with_parameters(spark):
    explained = spark.sql(
        "EXPLAIN LOCKS SELECT * FROM parts WHERE p = :v", args={"v": "a/b"}
    ).collect()
    assert ("default@parts@p=a%2Fb/q=1", "SHARED") in [tuple(r) for r in explained]


# -- disabled ----------------------------------------------------------------------------------


def test_disabled_statements_succeed_and_show_nothing(spark):
    other = spark.newSession()
    other.conf.set("spark.sparklock.enabled", "false")
    other.sql("LOCK TABLE plain EXCLUSIVE")
    other.sql("LOCK DATABASE default SHARED")
    assert other.sql("SHOW LOCKS").collect() == []
    assert other.sql("SHOW LOCKS plain EXTENDED").columns == EXTENDED
    other.sql("UNLOCK TABLE plain")  # not locked, but no error while disabled
    other.sql("UNLOCK DATABASE default")
    assert rows(spark, "SHOW LOCKS") == []  # nothing was taken for the enabled session either
    assert other.sql("EXPLAIN LOCKS SELECT * FROM plain").columns == EXPLAIN


def test_disabled_statements_succeed_without_the_python_side(spark):
    """enabled=false must not need the Python callback at all (BRIDGE.md: no calls when off)."""
    bridge = spark.sparkContext._jvm.io.sparklock.shim.SparkLockBridge
    callback = bridge.callback()
    other = spark.newSession()
    other.conf.set("spark.sparklock.enabled", "false")
    bridge.setCallback(None)
    try:
        other.sql("LOCK TABLE plain SHARED")
        assert other.sql("SHOW LOCKS").collect() == []
        other.sql("UNLOCK TABLE plain")
        assert other.sql("EXPLAIN LOCKS SELECT * FROM plain").collect() == []
    finally:
        bridge.setCallback(callback)
    assert rows(spark, "SHOW LOCKS") == []


# -- the contract: Java records and Python dataclasses agree (jvm-shim/BRIDGE.md) ----------------
MESSAGES = {
    "Messages$Done": messages.Done,
    "Messages$Failure": messages.Failure,
    "Messages$Acquired": messages.Acquired,
    "Messages$ReadEpochs": messages.ReadEpochs,
    "Messages$TableEpochs": messages.TableEpochs,
    "Messages$Locks": messages.Locks,
    "Messages$LockRow": messages.LockRow,
    "Messages$Explained": messages.Explained,
    "Messages$PlannedLock": messages.PlannedLock,
    "Messages$LockTarget": messages.LockTarget,
    "Messages$ShowLocksRequest": messages.ShowLocksRequest,
    "Messages$ExplicitLockRequest": messages.ExplicitLockRequest,
    "Messages$UnlockRequest": messages.UnlockRequest,
    "Messages$CancelWaitsRequest": messages.CancelWaitsRequest,
    "Messages$SessionClosedRequest": messages.SessionClosedRequest,
    "Messages$Report": telemetry.Report,
}


def test_java_records_and_python_dataclasses_name_the_same_fields(spark):
    assert_records_match(spark, MESSAGES)


def test_python_shows_every_column_the_jvm_asks_for(spark):
    command = spark.sparkContext._jvm.io.sparklock.shim.statements.LockStatementCommand
    assert list(command.EXTENDED_COLUMNS) == EXTENDED
    assert list(command.BASIC_COLUMNS) == BASIC
    assert list(command.EXPLAIN_COLUMNS) == EXPLAIN
    assert list(messages.LOCK_COLUMNS) == EXTENDED  # one LockRow per side: the same columns


def test_requests_read_back_as_the_jvm_wrote_them(spark, monkeypatch):
    """Each request the JVM sends, parsed into its dataclass and written again, is unchanged."""
    callback = callback_of(spark)
    sent: list[tuple[type, str]] = []

    def spy(answer, kind: type):
        def call(request_json: str) -> str:
            sent.append((kind, request_json))
            return answer(request_json)

        return call

    for method, kind in (
        ("lock", messages.ExplicitLockRequest),
        ("unlock", messages.UnlockRequest),
        ("showLocks", messages.ShowLocksRequest),
    ):
        monkeypatch.setattr(callback, method, spy(getattr(callback, method), kind))  # by name
    partition = f"PARTITION (p = {sql_string('a/b')})"
    for statement in [
        f"LOCK TABLE parts {partition} EXCLUSIVE",
        "SHOW LOCKS parts EXTENDED",
        f"UNLOCK TABLE parts {partition}",
        "LOCK DATABASE MixedDb SHARED",
        "SHOW LOCKS DATABASE mixeddb",
        "UNLOCK DATABASE mixeddb",
        "SHOW LOCKS",
    ]:
        spark.sql(statement).collect()
    assert [kind for kind, _ in sent] == [
        messages.ExplicitLockRequest,
        messages.ShowLocksRequest,
        messages.UnlockRequest,
        messages.ExplicitLockRequest,
        messages.ShowLocksRequest,
        messages.UnlockRequest,
        messages.ShowLocksRequest,
    ]
    requests = [messages.read_request(kind, wire) for kind, wire in sent]
    for request, (_, wire) in zip(requests, sent, strict=True):
        assert json.loads(messages.to_json(request)) == json.loads(wire)
    assert requests[0].object == messages.LockTarget("default", "parts", [("p", "a/b")])
    assert requests[0].mode == "EXCLUSIVE"
    assert requests[1].object == messages.LockTarget("default", "parts", [])
    assert requests[3].object == messages.LockTarget("mixeddb")
    assert requests[6].object is None
