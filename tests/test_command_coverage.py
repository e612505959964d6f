"""Issue 16: every command class of the installed Spark is classified, and each finding holds.

The coverage test reads the command classes from pyspark's jars (``tests/support/
command_enumeration``, no JVM) and fails on a class that is neither a row of the command table nor
on the no-lock or the fail-safe list of ``sparklock.rules.command_classes``. The rest checks the
issue's findings with ``EXPLAIN LOCKS`` on a real local session (v2 tables of the session catalog
are ``USING noop`` tables, Spark's own ``TableProvider``), with what Spark runs outside SQL
statements: ``df.write.format(...).save`` into a test ``CreatableRelationProvider``, ``CALL`` of
a test procedure (both compiled from ``tests/sources``), JDBC writes and reads (Derby in memory,
from pyspark's jars), streaming micro-batches.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.rules.command_classes import FAIL_SAFE, NO_LOCK
from sparklock.rules.commands import BY_CLASS, RULES
from sparklock.rules.delta import ROWS as DELTA_ROWS
from sparklock.rules.facts import parse_facts
from sparklock.rules.iceberg import ROWS as ICEBERG_ROWS
from sparklock.service import LockService
from tests.support.command_enumeration import command_classes  # noqa: E402
from tests.support.hive_harness import build_harness  # noqa: E402
from tests.support.locks import class_of, requested, wait_for  # noqa: E402
from tests.support.spark_versions import needs_spark  # noqa: E402

SHOW_PROCEDURES = (4, 1)  # the Spark lines that have them
CALL = (4, 0)

ISSUE = "issue 16: {}, fixed after the facts refactor"
DELTA_CLASSES = frozenset(row[0] for row in DELTA_ROWS)
ICEBERG_CLASSES = frozenset(row[0] for row in ICEBERG_ROWS)


# -- coverage by construction (no JVM: the jars' class files) ----------------------------------
def _category(name: str) -> list[str]:
    return [
        c
        for c, table in (("row", BY_CLASS), ("no-lock", NO_LOCK), ("fail-safe", FAIL_SAFE))
        if name in table
    ]


@pytest.mark.spark  # reads the installed Spark's jars: run on every supported version
def test_every_command_class_of_the_installed_spark_is_classified():
    found = command_classes()
    assert len(found) > 100, "the enumeration found too few command classes to be right"
    missing = sorted(n for n in found if not _category(n))
    assert not missing, (
        "command classes of this Spark with no row, no-lock or fail-safe entry "
        "(add each to a family of sparklock/rules/commands.py, e.g. rules/spark_ddl.py, or to "
        "sparklock/rules/command_classes.py):\n  " + "\n  ".join(missing)
    )


@pytest.mark.spark  # reads the installed Spark's jars: run on every supported version
def test_the_table_and_lists_are_disjoint_and_keyed_by_full_class_name():
    names = [r.class_name for r in RULES] + list(NO_LOCK) + list(FAIL_SAFE)
    prefixes = ("org.apache.spark.sql.", "io.delta.", "org.apache.iceberg.")
    assert all(n.startswith(prefixes) for n in names), names
    twice = sorted(n for n in set(names) if len(_category(n)) > 1 or names.count(n) > 1)
    assert not twice, f"classified more than once: {twice}"
    assert all(reason.strip() for reason in (*NO_LOCK.values(), *FAIL_SAFE.values()))


@pytest.mark.spark
@needs_spark(
    (4, 2),
    "stale entries are found against the Spark lines the lists were surveyed on (4.2+): an older "
    "Spark lacks the newer command classes the lists rightly name",
)
def test_entries_for_classes_this_spark_lacks_say_whose_they_are():
    # A row for another Spark version or for Delta is no error, but it must say so: anything else
    # absent from the installed Spark is a stale entry (as OptimizedCreateHiveTableAsSelectCommand
    # and ShowNamespaces were before they were marked Spark 3.5).
    found = command_classes()
    texts = {r.class_name: r.statement + r.note for r in RULES} | NO_LOCK | FAIL_SAFE
    stale = sorted(
        n
        for n, text in texts.items()
        if n not in found
        and not n.startswith("org.apache.spark.sql.delta.")
        and n not in DELTA_CLASSES  # Delta's own: checked against Delta's jars (test_delta.py)
        and n not in ICEBERG_CLASSES  # Iceberg's: checked against its jar (test_iceberg.py)
        and not re.search(r"\bSpark \d", text)
    )
    assert not stale, f"entries for classes the installed Spark lacks, with no version: {stale}"


# -- v2 rows that no table here can run: the facts the JVM reports for them ---------------------
def tref(field, name, db="default"):
    return {"name": field, "kind": "table", "catalog": "spark_catalog", "database": db,
            "table": name, "partitionColumns": ["p"]}  # fmt: skip


def policy(command, *fields):
    facts = {
        "command": command,
        "commandClass": class_of(command),
        "fields": list(fields),
        "reads": [],
        "currentDatabase": "cur",
    }
    return sorted(LockService().explain(parse_facts(facts)))


P_SPEC = {"name": "partitionSpec", "kind": "partitionSpecs", "specs": [{"p": "1"}]}


@pytest.mark.parametrize(
    "command,fields,expected",
    [
        ("DescribeColumn", [tref("relation", "t")], [("default@t", "SHARED")]),
        ("ShowPartitions", [tref("table", "t")], [("default@t", "SHARED")]),
        (
            "ShowTablePartition",
            [tref("table", "t"), P_SPEC],
            [("default@t", "SHARED"), ("default@t@p=1", "SHARED")],
        ),
        (
            "DescribeTablePartition",
            [tref("table", "t"), P_SPEC],
            [("default@t", "SHARED"), ("default@t@p=1", "SHARED")],
        ),
        (
            "ShowTablesExtended",
            [{"name": "namespace", "kind": "database", "database": "d2"}],
            [("d2", "SHARED")],
        ),
    ],
)
def test_v2_metadata_reads_are_shared(command, fields, expected):
    got = [r for r in policy(command, *fields) if r[0] != "default"]
    assert got == expected


def pspec(field, *specs):
    return {"name": field, "kind": "partitionSpecs", "specs": [{"p": v} for v in specs]}


# the v2 partition DDL of a v2 session catalog's table (Delta's, Iceberg's), as the JVM reports
# it: the resolved table and the resolved partition specs by field name; locks of the v1 twins
PARTITION_DDL = [
    (
        "AddPartitions",  # ALTER TABLE t ADD PARTITION (p='1') PARTITION (p='2')
        [tref("table", "t"), pspec("parts", "1", "2")],
        [("default@t", "SHARED"), ("default@t@p=1", "EXCLUSIVE"), ("default@t@p=2", "EXCLUSIVE")],
    ),
    (
        "DropPartitions",
        [tref("table", "t"), pspec("parts", "1")],
        [("default@t", "SHARED"), ("default@t@p=1", "EXCLUSIVE")],
    ),
    (
        "RenamePartitions",
        [tref("table", "t"), pspec("from", "1"), pspec("to", "2")],
        [("default@t", "SHARED"), ("default@t@p=1", "EXCLUSIVE"), ("default@t@p=2", "EXCLUSIVE")],
    ),
    (
        "TruncatePartition",
        [tref("table", "t"), pspec("partitionSpec", "1")],
        [("default@t", "SHARED"), ("default@t@p=1", "EXCLUSIVE")],
    ),
    ("SetTableLocation", [tref("table", "t")], [("default@t", "EXCLUSIVE")]),
    (
        "SetTableLocation",
        [tref("table", "t"), pspec("partitionSpec", "1")],
        [("default@t", "SHARED"), ("default@t@p=1", "EXCLUSIVE")],
    ),
    ("SetTableSerDeProperties", [tref("child", "t")], [("default@t", "SHARED")]),
    (
        "SetTableSerDeProperties",
        [tref("child", "t"), pspec("partitionSpec", "1")],
        [("default@t", "SHARED"), ("default@t@p=1", "SHARED")],
    ),
]


@pytest.mark.parametrize("command,fields,expected", PARTITION_DDL)
def test_v2_partition_ddl_locks_as_its_v1_twin(command, fields, expected):
    assert class_of(command).startswith("org.apache.spark.sql.catalyst.plans.logical.")
    got = [r for r in policy(command, *fields) if r[0] != "default"]
    assert got == expected


# v2 class and its (table field, spec field) -> v1 twin and its (table field, spec field)
V1_TWINS = {
    ("AddPartitions", "table", "parts"): (
        "AlterTableAddPartitionCommand",
        "tableName",
        "partitionSpecsAndLocs",
    ),
    ("DropPartitions", "table", "parts"): ("AlterTableDropPartitionCommand", "tableName", "specs"),
    ("TruncatePartition", "table", "partitionSpec"): (
        "TruncateTableCommand",
        "tableName",
        "partitionSpec",
    ),
    ("SetTableLocation", "table", "partitionSpec"): (
        "AlterTableSetLocationCommand",
        "tableName",
        "partitionSpec",
    ),
    ("SetTableSerDeProperties", "child", "partitionSpec"): (
        "AlterTableSerDePropertiesCommand",
        "tableName",
        "partSpec",
    ),
}


@pytest.mark.parametrize("v2", sorted(V1_TWINS), ids=lambda k: k[0])
def test_v2_partition_ddl_rows_equal_their_v1_rows(v2):
    (command, table, spec), (v1, v1_table, v1_spec) = v2, V1_TWINS[v2]
    for specs in ((), ("1",), ("1", "2")):
        given = [tref(table, "t")] + ([pspec(spec, *specs)] if specs else [])
        twin = [tref(v1_table, "t")] + ([pspec(v1_spec, *specs)] if specs else [])
        assert policy(command, *given) == policy(v1, *twin), (command, specs)


def test_v2_write_rows_fall_back_to_their_table_when_no_write_is_reported():
    # The JVM reports an AppendData into a DataSourceV2Relation under "writes" (and no fields);
    # a target it cannot report as a write keeps the old fail-safe lock through the row's field.
    assert [r for r in policy("AppendData", tref("table", "t")) if r[0] != "default"] == [
        ("default@t", "EXCLUSIVE")
    ]


# -- the findings on a real session ------------------------------------------------------------
D = ("default", "SHARED")


def S(name):  # noqa: N802
    return (name, "SHARED")


def X(name):  # noqa: N802
    return (name, "EXCLUSIVE")


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    import sparklock

    warehouse = tmp_path_factory.mktemp("warehouse")
    builder = (
        SparkSession.builder.master("local[1]")
        .appName("sparklock-command-coverage")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    session = sparklock.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def show_locks(spark, *target) -> list[tuple[str, str]]:
    statement = "SHOW LOCKS" + (" " + target[0] if target else "")
    return sorted((r[0], r[1]) for r in spark.sql(statement).collect())


@pytest.fixture
def fresh(spark):
    """t (partitioned parquet), u, the v2 table nt (``USING noop``), database d2 with d2.t."""
    for s in (
        "DROP VIEW IF EXISTS tv",
        "DROP TABLE IF EXISTS t",
        "DROP TABLE IF EXISTS u",
        "DROP TABLE IF EXISTS nt",
        "DROP TABLE IF EXISTS nt2",
        "DROP TABLE IF EXISTS gone",
        "DROP TABLE IF EXISTS st",
        "DROP DATABASE IF EXISTS d2 CASCADE",
        "CREATE TABLE t (a INT, p STRING) USING parquet PARTITIONED BY (p)",
        "CREATE TABLE u (a INT) USING parquet",
        "INSERT INTO u VALUES (1)",
        "CREATE TABLE nt USING noop",
        "CREATE DATABASE d2",
        "CREATE TABLE d2.t (a INT) USING parquet",
    ):
        spark.sql(s)
    yield spark
    assert show_locks(spark) == []


def explain(spark, statement: str) -> list[tuple[str, str]]:
    return sorted((r[0], r[1]) for r in spark.sql("EXPLAIN LOCKS " + statement).collect())


@pytest.mark.spark
@pytest.mark.parametrize(
    "statement",
    [
        "SHOW FUNCTIONS",
        "SHOW USER FUNCTIONS",
        pytest.param("SHOW PROCEDURES", marks=needs_spark(SHOW_PROCEDURES, "SHOW PROCEDURES")),
    ],
)
def test_function_and_procedure_listings_lock_nothing(fresh, statement):
    assert explain(fresh, statement) == []


@pytest.mark.spark
def test_show_functions_runs_while_another_session_locks_the_database(fresh):
    holder = fresh.newSession()  # a session's own explicit locks never block its statements
    holder.sql("LOCK DATABASE default EXCLUSIVE")
    fresh.conf.set("spark.sparklock.lock.numRetries", "1")  # a conflict fails at once
    try:
        assert fresh.sql("SHOW USER FUNCTIONS").collect() == []
    finally:
        fresh.conf.unset("spark.sparklock.lock.numRetries")
        holder.sql("UNLOCK DATABASE default")


def _location(spark, table: str) -> str:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    return next(r.data_type for r in rows if r.col_name == "Location")


@pytest.mark.spark
def test_temporary_view_using_locks_no_permanent_object(fresh):
    stmt = f"CREATE TEMPORARY VIEW tv USING parquet OPTIONS (path '{_location(fresh, 'u')}')"
    assert [r for r in explain(fresh, stmt) if r[0] == "default@tv"] == []


@pytest.mark.spark
def test_temporary_view_using_locks_what_it_reads(fresh):
    stmt = f"CREATE TEMPORARY VIEW tv USING parquet OPTIONS (path '{_location(fresh, 'u')}')"
    assert explain(fresh, stmt) == [D, S("default@u")]


@pytest.mark.spark
def test_rename_locks_the_new_name_in_the_old_names_database(fresh):
    assert explain(fresh, "ALTER TABLE d2.t RENAME TO t3") == [
        S("d2"),
        X("d2@t"),
        X("d2@t3"),
    ]


@pytest.mark.spark
def test_renaming_a_temporary_view_locks_neither_name(fresh):
    fresh.sql("CREATE TEMPORARY VIEW tv AS SELECT a FROM u")
    try:
        assert explain(fresh, "ALTER VIEW tv RENAME TO tv2") == []
        assert explain(fresh, "ALTER TABLE u RENAME TO u2") == [D, X("default@u"), X("default@u2")]
    finally:
        fresh.sql("DROP VIEW IF EXISTS tv")


@pytest.mark.spark
@needs_spark((4, 0), "DESCRIBE ... AS JSON")
def test_describe_as_json_is_shared(fresh):
    assert explain(fresh, "DESCRIBE EXTENDED t AS JSON") == [D, S("default@t")]


@pytest.mark.spark
def test_describe_database_v1_command_is_shared(fresh):
    fresh.conf.set("spark.sql.legacy.useV1Command", "true")
    try:
        assert explain(fresh, "DESCRIBE DATABASE d2") == [S("d2")]
    finally:
        fresh.conf.unset("spark.sql.legacy.useV1Command")


@pytest.mark.spark
@pytest.mark.parametrize(
    "statement",
    [
        "DESCRIBE nt",
        "DESCRIBE EXTENDED nt",
        pytest.param(
            "DESCRIBE EXTENDED nt AS JSON", marks=needs_spark((4, 0), "DESCRIBE ... AS JSON")
        ),
        "SHOW COLUMNS IN nt",
        "SHOW CREATE TABLE nt",
        "SHOW TBLPROPERTIES nt",
    ],
)
def test_v2_metadata_reads_of_the_session_catalog_are_shared(fresh, statement):
    assert explain(fresh, statement) == [D, S("default@nt")]


@pytest.mark.spark
def test_v2_create_table_like_reads_its_source_shared(fresh):
    assert explain(fresh, "CREATE TABLE nt2 LIKE nt") == [D, S("default@nt"), X("default@nt2")]


@pytest.mark.spark
def test_v2_rename_locks_the_new_name(fresh):
    assert explain(fresh, "ALTER TABLE nt RENAME TO nt3") == [
        D,
        X("default@nt"),
        X("default@nt3"),
    ]


@pytest.fixture
def dropped_while_locked(fresh):
    """``gone``: locked EXCLUSIVE explicitly, then dropped; the lock is removed afterwards."""
    fresh.sql("CREATE TABLE gone (a INT) USING parquet")
    fresh.sql("LOCK TABLE gone EXCLUSIVE")
    fresh.sql("DROP TABLE gone")
    yield fresh
    if show_locks(fresh):  # what UNLOCK by name could not remove: recreate the table to unlock
        fresh.sql("CREATE TABLE IF NOT EXISTS gone (a INT) USING parquet")
        fresh.sql("UNLOCK TABLE gone")
        fresh.sql("DROP TABLE gone")


@pytest.mark.spark
def test_unlock_removes_the_lock_of_a_dropped_table(dropped_while_locked):
    dropped_while_locked.sql("UNLOCK TABLE gone")
    assert show_locks(dropped_while_locked) == []


@pytest.mark.spark
def test_show_locks_names_a_dropped_table(dropped_while_locked):
    assert show_locks(dropped_while_locked, "gone") == [X("default@gone")]


# -- df.write.format(<CreatableRelationProvider>).save(p): SaveIntoDataSourceCommand --------------
SOURCES = Path(__file__).parent / "sources"


@pytest.fixture(scope="module")
def add_test_class(spark, tmp_path_factory):
    """``add(name)``: ``tests/sources/<name>.java`` compiled against pyspark's jars, jarred and
    added to the session (``ADD JAR``: the session's class loader, on this thread's JVM thread)."""
    for tool in ("javac", "jar"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH: the test classes cannot be built")

    def add(name: str) -> str:
        root = tmp_path_factory.mktemp(name)
        classes = build_harness(root, source=SOURCES / f"{name}.java", main_class=name)
        jar = root / f"{name}.jar"
        subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
        spark.sql(f"ADD JAR {jar}")
        return name

    return add


@pytest.fixture(scope="module")
def marker_provider(add_test_class):
    """The test data source ``MarkerProvider`` (a ``CreatableRelationProvider``)."""
    return add_test_class("MarkerProvider")


def _save(spark, provider: str, path: str):
    return lambda: spark.range(3).write.format(provider).mode("overwrite").save(path)


@pytest.mark.spark
def test_save_into_a_data_source_locks_its_path_exclusive(fresh, marker_provider, tmp_path):
    target = tmp_path / "out"
    got = requested(fresh, _save(fresh, marker_provider, str(target)))
    path_object = LockObject.of_path(f"file:{target}")
    assert got == [sorted([(path_object.database, "SHARED"), (path_object.name, "EXCLUSIVE")])]
    assert (target / "_marker").read_text() == "3 Overwrite"


@pytest.mark.spark
def test_save_into_a_tables_location_locks_the_table_exclusive(fresh, marker_provider):
    location = _location(fresh, "u")
    assert requested(fresh, _save(fresh, marker_provider, location)) == [[D, X("default@u")]]
    holder = fresh.newSession()  # a reader of u in another session: the save must wait for it
    holder.sql("LOCK TABLE u SHARED")
    fresh.conf.set("spark.sparklock.lock.numRetries", "1")  # a conflict fails at once
    try:
        with pytest.raises(Exception, match="LOCK_CONFLICT"):
            _save(fresh, marker_provider, location)()
    finally:
        fresh.conf.unset("spark.sparklock.lock.numRetries")
        holder.sql("UNLOCK TABLE u")


def _path_locks(*paths) -> list[tuple[str, str]]:
    objects = [LockObject.of_path(f"file:{p}") for p in paths]
    return [(objects[0].database, "SHARED")] + [(o.name, "EXCLUSIVE") for o in objects]


@pytest.mark.spark
def test_save_with_a_paths_option_locks_every_path(fresh, marker_provider, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    paths = f'["{one}", "{two}"]'

    def save():
        fresh.range(3).write.format(marker_provider).mode("overwrite").option("paths", paths).save(
            str(tmp_path / "out")
        )

    got = requested(fresh, save)
    assert got == [sorted(_path_locks(tmp_path / "out", one, two))]


@pytest.mark.spark
@pytest.mark.parametrize("v2", [False, True], ids=["v1 file source", "v2 file source"])
def test_a_read_of_several_paths_locks_every_path_v1_and_v2(fresh, tmp_path, v2):
    one, two = tmp_path / "one", tmp_path / "two"
    for p in (one, two):
        fresh.range(2).write.parquet(str(p))
    if v2:  # parquet read through the v2 file source: the paths travel as the `paths` option
        fresh.conf.set("spark.sql.sources.useV1SourceList", "")
    try:
        df = fresh.read.format("parquet").load([str(one), str(two)])
        got = requested(fresh, df.count)
    finally:
        fresh.conf.unset("spark.sql.sources.useV1SourceList")
    shared = [(n, "SHARED") for n, _ in _path_locks(one, two)]
    assert got == [sorted(set(shared))]


# -- JDBC: a write into a table of a JDBC database (Derby in memory, from pyspark's jars) --------
def _jdbc_write(spark, url: str, table: str):
    writer = spark.range(3).write.format("jdbc").option("url", url).option("dbtable", table)
    return lambda: writer.mode("overwrite").save()


@pytest.mark.spark
def test_a_jdbc_write_locks_its_table_as_a_connector_object(fresh):
    url = "jdbc:derby:memory:sparklock;create=true"
    got = requested(fresh, _jdbc_write(fresh, url, "APP.T1"))
    target = LockObject.of_connector("jdbc:derby:memory:sparklock/APP.T1")
    assert got == [sorted([(target.database, "SHARED"), (target.name, "EXCLUSIVE")])]
    rows = fresh.read.format("jdbc").option("url", url).option("dbtable", "APP.T1").load()
    assert sorted(r[0] for r in rows.collect()) == [0, 1, 2]


@pytest.mark.spark
def test_a_jdbc_lock_names_no_credentials(fresh):
    url = "jdbc:derby:memory:sparklock;create=true;user=alice;password=secret"
    got = requested(fresh, _jdbc_write(fresh, url, "APP.T2"))
    assert not any("secret" in name or "alice" in name for name, _ in got[0]), got


@pytest.mark.spark
def test_a_jdbc_write_waits_for_a_holder_of_its_table(fresh):
    # the holder named the table through another URL (other properties): the same lock
    from sparklock.managers import get_manager
    from sparklock.service import config_of

    manager = get_manager(config_of({}))  # the session's (embedded) manager
    target = LockObject.of_connector("jdbc:derby:memory:sparklock/app.t3")
    held = manager.acquire([LockRequest(target, LockMode.SHARED)], owner="reader", query_id="q")
    fresh.conf.set("spark.sparklock.lock.numRetries", "1")  # a conflict fails at once
    try:
        with pytest.raises(Exception, match="LOCK_CONFLICT"):
            _jdbc_write(fresh, "jdbc:derby:memory:sparklock;create=true;user=bob", "APP.T3")()
    finally:
        fresh.conf.unset("spark.sparklock.lock.numRetries")
        manager.release(held)


@pytest.mark.spark
def test_a_jdbc_read_locks_its_table_shared(fresh):
    url = "jdbc:derby:memory:sparklock;create=true"
    _jdbc_write(fresh, url, "APP.T4")()
    reader = (
        fresh.read.format("jdbc").option("url", url + ";user=carol").option("dbtable", "APP.T4")
    )
    got = requested(fresh, reader.load().count)
    target = LockObject.of_connector("jdbc:derby:memory:sparklock/APP.T4")
    assert got == [sorted([(target.database, "SHARED"), (target.name, "SHARED")])]
    query = fresh.read.format("jdbc").option("url", url).option("query", "SELECT * FROM APP.T4")
    assert all(g == [] for g in requested(fresh, query.load().count))  # no table named


# -- CALL: a procedure of a v2 catalog (tests/sources/ProcedureCatalog.java) --------------------
@pytest.fixture
def procedures(fresh, add_test_class):
    """Catalog ``proc`` with the procedure ``proc.sys.touch(table STRING)``."""
    fresh.conf.set("spark.sql.catalog.proc", add_test_class("ProcedureCatalog"))
    yield fresh
    fresh.conf.unset("spark.sql.catalog.proc")


@pytest.mark.spark
@needs_spark(CALL, "CALL of a v2 catalog's procedure")
def test_explain_locks_of_call_does_not_run_the_procedure(procedures):
    def calls() -> int:  # py4j reads the static AtomicInteger as its value
        return int(procedures.sparkContext._jvm.ProcedureCatalog.CALLS)

    before = calls()
    assert explain(procedures, "CALL proc.sys.touch(table => 'default.u')") == [D, X("default@u")]
    assert calls() == before  # staged as Spark's EXPLAIN stages it: nothing ran
    procedures.sql("CALL proc.sys.touch(table => 'default.u')").collect()
    assert calls() == before + 1  # the counter does count a real CALL


@pytest.mark.spark
@needs_spark(CALL, "CALL of a v2 catalog's procedure")
def test_call_waits_for_a_lock_on_the_table_it_names(procedures):
    def calls() -> int:
        return int(procedures.sparkContext._jvm.ProcedureCatalog.CALLS)

    holder = procedures.newSession()
    holder.sql("LOCK TABLE u SHARED")
    procedures.conf.set("spark.sparklock.lock.numRetries", "1")  # a conflict fails at once
    before = calls()
    try:
        with pytest.raises(Exception, match="LOCK_CONFLICT"):
            procedures.sql("CALL proc.sys.touch(table => 'default.u')").collect()
        assert calls() == before  # the procedure did not run without its lock
    finally:
        procedures.conf.unset("spark.sparklock.lock.numRetries")
        holder.sql("UNLOCK TABLE u")


@pytest.mark.spark
@needs_spark(CALL, "CALL of a v2 catalog's procedure")
def test_call_runs_its_procedure_holding_its_locks_and_releases_them(procedures):
    def calls() -> int:
        return int(procedures.sparkContext._jvm.ProcedureCatalog.CALLS)

    before = calls()
    stmt = "CALL proc.sys.touch(table => 'default.u')"
    got = requested(procedures, lambda: procedures.sql(stmt).collect())
    assert got == [[D, X("default@u")]]
    assert calls() == before + 1  # run once, by the locked command (not by the analyzer too)
    assert show_locks(procedures) == []


@pytest.mark.spark
@needs_spark(CALL, "CALL of a v2 catalog's procedure")
@pytest.mark.parametrize(
    "argument,expected",
    [
        ("'u'", [D, X("default@u")]),  # the current database's table
        ("'spark_catalog.d2.t'", [S("d2"), X("d2@t")]),
        ("'no_such_table'", []),  # a string that names no table (a strategy, a date): nothing
        ("'not a name'", []),
        ("concat('default', '.u')", [D, X("default@u")]),  # constant-folded
    ],
)
def test_call_locks_the_existing_tables_its_string_arguments_name(procedures, argument, expected):
    assert explain(procedures, f"CALL proc.sys.touch({argument})") == expected


@pytest.mark.spark
@needs_spark(CALL, "CALL of a v2 catalog's procedure")
def test_a_procedure_that_queries_its_table_runs_inside_its_calls_locks(procedures):
    # row_count runs a query of its own on u while the CALL holds EXCLUSIVE on u: that query is
    # part of the statement (it must not wait for its own CALL), and the rows come back as Spark's
    stmt = "CALL proc.sys.row_count(table => 'default.u')"
    procedures.conf.set("spark.sparklock.lock.numRetries", "1")  # waiting for itself would fail
    try:
        got = requested(procedures, lambda: procedures.sql(stmt).collect())
        rows = procedures.sql(stmt).collect()
    finally:
        procedures.conf.unset("spark.sparklock.lock.numRetries")
    assert got[0] == [D, X("default@u")]
    assert [tuple(r) for r in rows] == [("default.u", 1)]
    assert rows[0].asDict() == {"table_name": "default.u", "row_count": 1}
    assert show_locks(procedures) == []


@pytest.mark.spark
@needs_spark(CALL, "CALL of a v2 catalog's procedure")
def test_spark_explain_of_call_still_does_not_run_it(procedures):
    before = int(procedures.sparkContext._jvm.ProcedureCatalog.CALLS)
    procedures.sql("EXPLAIN CALL proc.sys.touch(table => 'default.u')").collect()
    assert int(procedures.sparkContext._jvm.ProcedureCatalog.CALLS) == before


# -- Structured Streaming: each micro-batch locks what it reads and writes -----------------------
def _until_stopped(query) -> None:
    assert query.awaitTermination(120), "the availableNow query did not finish"
    assert query.exception() is None, query.exception()


@pytest.mark.spark
def test_a_stream_from_a_table_into_a_table_locks_its_micro_batch(fresh, tmp_path):
    fresh.sql("CREATE TABLE st (a INT) USING parquet")
    writer = (
        fresh.readStream.table("u")
        .writeStream.option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
    )
    got = requested(fresh, lambda: _until_stopped(writer.toTable("st")))
    assert got == [sorted([D, S("default@u"), X("default@st")])]  # one batch: u has one row
    assert fresh.table("st").collect() == [(1,)]


@pytest.mark.spark
def test_a_micro_batch_waits_for_a_reader_of_its_table(fresh, tmp_path):
    fresh.sql("CREATE TABLE st (a INT) USING parquet")
    holder = fresh.newSession()
    holder.sql("LOCK TABLE st SHARED")
    fresh.conf.set("spark.sparklock.lock.numRetries", "1")  # a conflict fails at once
    try:
        query = (
            fresh.readStream.table("u")
            .writeStream.option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(availableNow=True)
            .toTable("st")
        )
        with pytest.raises(Exception, match="LOCK_CONFLICT"):  # the query fails with it
            query.awaitTermination(120)
    finally:
        fresh.conf.unset("spark.sparklock.lock.numRetries")
        holder.sql("UNLOCK TABLE st")
    assert fresh.table("st").collect() == []


@pytest.mark.spark
def test_a_stream_into_a_path_locks_the_path_per_micro_batch(fresh, tmp_path):
    out = tmp_path / "out"
    writer = (
        fresh.readStream.table("u")
        .writeStream.format("parquet")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .option("path", str(out))
        .trigger(availableNow=True)
    )
    got = requested(fresh, lambda: _until_stopped(writer.start()))
    path_object = LockObject.of_path(f"file:{out}")
    assert got == [
        sorted([D, S("default@u"), (path_object.database, "SHARED"), X(path_object.name)])
    ]


@pytest.mark.spark
def test_a_rate_stream_locks_its_table_for_each_micro_batch(fresh, tmp_path):
    fresh.sql("CREATE TABLE st (timestamp TIMESTAMP, value BIGINT) USING parquet")
    writer = (
        fresh.readStream.format("rate")
        .option("rowsPerSecond", "20")
        .load()
        .writeStream.option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="300 milliseconds")
    )

    def three_batches() -> None:
        query = writer.toTable("st")
        try:
            assert wait_for(lambda: len(query.recentProgress) >= 3, timeout=120)
        finally:
            query.stop()

    got = requested(fresh, three_batches)
    assert len(got) >= 2 and all(g == [D, X("default@st")] for g in got), got
    assert fresh.table("st").count() > 0
