"""Apache Iceberg with Iceberg's own runtime jar: every Iceberg DDL plan and procedure of the jar
classified, the rows' locks, and the golden ``EXPLAIN LOCKS`` sets of the statements users run on
a real Iceberg session (a hadoop catalog ``ice`` and Iceberg behind the session catalog).

The jar's and the session's tests run where Iceberg builds a runtime for the installed Spark line
(3.5, 4.0, 4.1) and skip on 4.2 and 4.3 saying why; the rows' and the helper's run everywhere.
One Iceberg session for the module (``tests/support/iceberg``).

What a statement on the named catalog ``ice`` locks is written in one place (:func:`on_ice`).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from sparklock.rules.command_classes import FAIL_SAFE, NO_LOCK
from sparklock.rules.commands import BY_CLASS
from sparklock.rules.facts import parse_facts
from sparklock.rules.iceberg import PLANS, ROWS
from sparklock.spark import iceberg as helper
from tests.support import iceberg
from tests.support.command_enumeration import ClassHeader, _headers, _plan_test, spark_jars
from tests.support.locks import explain, policy, requested, show_locks

# the rows' and the helper's tests need no jar and run on every line; the rest skips where
# Iceberg builds no runtime (the jar's tests by their mark, the session's by its fixture)
pytestmark = [pytest.mark.spark, pytest.mark.iceberg]
needs_iceberg = iceberg.needs_iceberg

PROCEDURES = "org/apache/iceberg/spark/procedures/"
LOGICAL = "org/apache/spark/sql/catalyst/plans/logical/"


def S(name):  # noqa: N802
    return (name, "SHARED")


def X(name):  # noqa: N802
    return (name, "EXCLUSIVE")


# -- what a statement on the named catalog `ice` locks: THE place to adjust ----------------------
def on_ice(*, read: tuple[str, ...] = (), write: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The lock set of a statement that reads ``read`` and writes ``write`` (tables of ``ice``,
    as ``ice.db.t``): the table's catalog-qualified display name, SHARED on its ancestors (the
    catalog ``ice`` and the namespace ``ice.db``), SHARED on what it reads, EXCLUSIVE on what it
    writes. A v2 write takes no writers facet today (Iceberg's writers share no staging
    directory); if the catalogs branch defines one for catalog tables, add it here."""
    locks = {S("ice.")}
    for name in (*read, *write):
        locks.add(S(name.rsplit(".", 1)[0] + "."))
    locks |= {S(n) for n in read if n not in write}
    locks |= {X(n) for n in write}
    return sorted(locks)


# -- coverage by construction (no JVM: the jar's class files) ----------------------------------
def _jar_headers() -> dict[str, ClassHeader]:
    return _headers([iceberg.runtime_jar()], (PROCEDURES, LOGICAL))


def _procedures(headers: dict[str, ClassHeader]) -> set[str]:
    return {
        n
        for n, h in headers.items()
        if n.startswith(PROCEDURES.replace("/", ".")) and n.endswith("Procedure") and h.concrete
    }


def _plans(headers: dict[str, ClassHeader]) -> set[str]:
    is_plan = _plan_test({**_headers(spark_jars()), **headers})
    return {
        n
        for n, h in headers.items()
        if n.startswith(LOGICAL.replace("/", ".")) and "$" not in n and h.concrete and is_plan(n)
    }


@needs_iceberg
def test_every_iceberg_procedure_of_the_jar_has_a_row():
    found = _procedures(_jar_headers())
    assert len(found) > 15, f"the enumeration found too few procedures to be right: {found}"
    missing = sorted(found - set(BY_CLASS))
    assert not missing, (
        f"{iceberg.runtime_jar().name}: procedures with no row (sparklock/rules/iceberg.py):\n  "
        + "\n  ".join(missing)
    )


@needs_iceberg
def test_every_iceberg_logical_plan_of_the_jar_is_classified():
    found = _plans(_jar_headers())
    assert len(found) >= 10, f"the enumeration found too few plans to be right: {found}"
    known = set(BY_CLASS) | set(PLANS) | set(NO_LOCK) | set(FAIL_SAFE)
    missing = sorted(found - known)
    assert not missing, (
        f"{iceberg.runtime_jar().name}: logical plans with no row or PLANS entry "
        "(sparklock/rules/iceberg.py):\n  " + "\n  ".join(missing)
    )


@needs_iceberg
def test_iceberg_rows_name_classes_of_the_jar():
    with zipfile.ZipFile(iceberg.runtime_jar()) as z:
        present = {n[: -len(".class")].replace("/", ".") for n in z.namelist()}
    # an entry for a class of another Spark line's runtime must say which line has it
    texts = {r[0]: r[1] + r[3] for r in ROWS} | PLANS
    stale = sorted(n for n, text in texts.items() if n not in present and "Spark 3.5" not in text)
    assert not stale, f"{iceberg.runtime_jar().name} has none of: {stale}"


# -- the rows, on facts as the JVM reports them (session-catalog names: no JVM) ------------------
def _tref(field: str, table: str, db: str = "default") -> dict:
    return {"name": field, "kind": "table", "catalog": "spark_catalog", "database": db,
            "table": table}  # fmt: skip


def _locks(command_class: str, *fields: dict) -> list[tuple[str, str]]:
    facts = {"command": "Call", "commandClass": command_class, "fields": list(fields)}
    return [r for r in policy(parse_facts(facts)) if r[0] != "default"]


_P = "org.apache.iceberg.spark.procedures."


@pytest.mark.parametrize(
    "procedure,fields,expected",
    [
        ("RewriteDataFilesProcedure", [_tref("table", "t")], [X("default@t")]),
        ("ExpireSnapshotsProcedure", [_tref("table", "t")], [X("default@t")]),
        ("RollbackToSnapshotProcedure", [_tref("table", "t")], [X("default@t")]),
        ("AncestorsOfProcedure", [_tref("table", "t")], [S("default@t")]),
        ("MigrateTableProcedure", [_tref("table", "t")], [X("default@t")]),
        (
            "SnapshotTableProcedure",
            [_tref("source_table", "s"), _tref("table", "t")],
            [S("default@s"), X("default@t")],
        ),
        (
            "AddFilesProcedure",
            [_tref("table", "t"), _tref("source_table", "s")],
            [S("default@s"), X("default@t")],
        ),
        ("RegisterTableProcedure", [_tref("table", "t")], [X("default@t")]),
        # a string argument that is no table argument (a strategy, a filter) locks nothing
        (
            "RewriteDataFilesProcedure",
            [_tref("table", "t"), _tref("strategy", "binpack")],
            [X("default@t")],
        ),
        ("ExpireSnapshotsProcedure", [_tref("args", "t"), _tref("table", "t")], [X("default@t")]),
    ],
)
def test_a_procedure_locks_the_tables_its_row_names(procedure, fields, expected):
    assert _locks(_P + procedure, *fields) == expected


def test_every_iceberg_row_locks_its_table():
    for cls, _statement, targets, _note in ROWS:
        fields = [_tref(f, f"t_{f}") for f, _ in targets]
        got = _locks(cls, *fields)
        assert got == sorted((f"default@t_{f}", m.value) for f, m in targets), cls


# -- the helper ---------------------------------------------------------------------------------
def test_configure_iceberg_sets_what_an_iceberg_user_sets(tmp_path):
    from pyspark.sql import SparkSession

    b = SparkSession.Builder().config("spark.sql.extensions", "x.Ext")
    helper.configure_iceberg(b, "cat", warehouse=tmp_path, spark_version="4.1.4")
    o = b._options
    assert o["spark.jars.packages"] == ("org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0")
    assert o["spark.sql.extensions"] == "x.Ext," + helper.EXTENSION
    assert o["spark.sql.catalog.cat"] == helper.CATALOG_CLASS
    assert o["spark.sql.catalog.cat.type"] == "hadoop"
    assert o["spark.sql.catalog.cat.warehouse"] == str(tmp_path)
    assert o["spark.jars.ivy"].endswith("sparklock/iceberg/1.11.0/ivy")
    session = helper.configure_iceberg(
        SparkSession.Builder(), "spark_catalog", spark_version="3.5.8"
    )
    assert session._options["spark.sql.catalog.spark_catalog"] == helper.SESSION_CATALOG_CLASS
    assert session._options["spark.jars.packages"].endswith("runtime-3.5_2.12:1.11.0")


@pytest.mark.parametrize(
    "version,when",
    [("4.2.0", "Iceberg 1.12.0 .* expected to add it"), ("4.3.0", "no Iceberg release has")],
)
def test_a_spark_line_with_no_iceberg_runtime_is_refused_saying_why(version, when):
    from pyspark.sql import SparkSession

    from sparklock.errors import SparkLockSetupError

    with pytest.raises(SparkLockSetupError, match=f"Spark {version[:3]} .*; {when}"):
        helper.configure_iceberg(SparkSession.Builder(), spark_version=version)


# -- the module's Iceberg session: `ice` (hadoop catalog) and Iceberg behind spark_catalog -------
SETUP_SQL = (
    "CREATE NAMESPACE ice.db",
    "CREATE TABLE ice.db.t (id INT, p STRING) USING iceberg PARTITIONED BY (p)",
    "CREATE TABLE ice.db.s (id INT, p STRING) USING iceberg",
    "INSERT INTO ice.db.t VALUES (1, 'a'), (2, 'b')",
    "INSERT INTO ice.db.s VALUES (1, 'z')",
    "ALTER TABLE ice.db.t CREATE BRANCH b1",
    "CREATE TABLE st (id INT, p STRING) USING iceberg PARTITIONED BY (p)",
    "INSERT INTO st VALUES (1, 'a')",
    "CREATE TABLE mor (id INT, p STRING) USING iceberg TBLPROPERTIES ("
    "'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', "
    "'write.merge.mode' = 'merge-on-read', 'format-version' = '2')",
    "INSERT INTO mor VALUES (1, 'a'), (2, 'b')",
    "CREATE TABLE pq (id INT, p STRING) USING parquet",
    "INSERT INTO pq VALUES (1, 'a')",
)


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    with iceberg.module_session(
        tmp_path_factory, "test_iceberg", SETUP_SQL, session_catalog_too=True
    ) as session:
        yield session


T, SRC = "ice.db.t", "ice.db.s"
MERGE = (
    "MERGE INTO ice.db.t USING ice.db.s ON ice.db.t.id = ice.db.s.id "
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
)

GOLDEN_ICE = [
    ("SELECT * FROM ice.db.t", on_ice(read=(T,))),
    # rows all in one identity partition lock it (tests/test_iceberg_partitions.py)
    ("INSERT INTO ice.db.t VALUES (3, 'c')", sorted(on_ice(read=(T,)) + [X(T + "@p=c")])),
    ("INSERT OVERWRITE ice.db.t SELECT * FROM ice.db.s", on_ice(read=(SRC,), write=(T,))),
    ("DELETE FROM ice.db.t WHERE id = 1", on_ice(write=(T,))),
    ("UPDATE ice.db.t SET p = 'u' WHERE id = 2", on_ice(write=(T,))),
    (MERGE, on_ice(read=(SRC,), write=(T,))),
    ("ALTER TABLE ice.db.t ADD PARTITION FIELD bucket(4, id)", on_ice(write=(T,))),
    ("ALTER TABLE ice.db.t WRITE ORDERED BY id", on_ice(write=(T,))),
    ("ALTER TABLE ice.db.t CREATE BRANCH b2", on_ice(write=(T,))),
    ("ALTER TABLE ice.db.t CREATE TAG t1", on_ice(write=(T,))),
    ("ALTER TABLE ice.db.t SET IDENTIFIER FIELDS id", on_ice(write=(T,))),
    ("DROP TABLE ice.db.s", on_ice(write=(SRC,))),
    ("SELECT * FROM ice.db.t.snapshots", on_ice(read=(T,))),
    ("SELECT * FROM ice.db.t.files", on_ice(read=(T,))),
    ("SELECT * FROM ice.db.t.history", on_ice(read=(T,))),
    ("SELECT * FROM ice.db.t.branch_b1", on_ice(read=(T,))),
    ("SELECT * FROM ice.db.t VERSION AS OF 'b1'", on_ice(read=(T,))),
    (
        "INSERT INTO ice.db.t.branch_b1 VALUES (4, 'd')",
        sorted(on_ice(read=(T,)) + [X(T + "@p=d")]),
    ),
    ("CALL ice.system.rewrite_data_files(table => 'db.t')", on_ice(write=(T,))),
    ("CALL ice.system.expire_snapshots('db.t')", on_ice(write=(T,))),
    ("CALL ice.system.rollback_to_snapshot('db.t', 1)", on_ice(write=(T,))),
    ("CALL ice.system.ancestors_of(table => 'ice.db.t')", on_ice(read=(T,))),
    (
        "CALL ice.system.add_files(table => 'db.t', source_table => 'spark_catalog.default.pq')",
        sorted(on_ice(write=(T,)) + [S("default"), S("default@pq")]),
    ),
    (
        "CALL ice.system.register_table('db.reg', '/no/such/metadata.json')",
        on_ice(write=("ice.db.reg",)),
    ),
]


def _id(case) -> str:
    return case[0][:48]


@pytest.mark.parametrize("statement,expected", GOLDEN_ICE, ids=[_id(g) for g in GOLDEN_ICE])
def test_explain_locks_of_iceberg_statements_on_a_named_catalog(spark, statement, expected):
    assert explain(spark, statement) == expected


D = S("default")
GOLDEN_SESSION = [
    ("SELECT * FROM st", [D, S("default@st")]),
    ("SELECT * FROM default.st.snapshots", [D, S("default@st")]),
    ("INSERT INTO st VALUES (2, 'b')", [D, S("default@st"), X("default@st@p=b")]),
    ("DELETE FROM st WHERE id = 1", [D, X("default@st")]),
    (
        "MERGE INTO st USING pq ON st.id = pq.id WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED THEN INSERT *",
        [D, S("default@pq"), X("default@st")],
    ),
    ("ALTER TABLE st ADD PARTITION FIELD id", [D, X("default@st")]),
    # merge-on-read tables: Spark's WriteDelta instead of ReplaceData
    ("DELETE FROM mor WHERE id = 1", [D, X("default@mor")]),
    ("UPDATE mor SET p = 'u' WHERE id = 2", [D, X("default@mor")]),
    (
        "MERGE INTO mor USING pq ON mor.id = pq.id WHEN MATCHED THEN UPDATE SET *",
        [D, S("default@pq"), X("default@mor")],
    ),
    ("CALL spark_catalog.system.expire_snapshots('default.st')", [D, X("default@st")]),
    ("CALL spark_catalog.system.rewrite_data_files(table => 'st')", [D, X("default@st")]),
    ("CALL spark_catalog.system.migrate('default.pq')", [D, X("default@pq")]),
    (
        "CALL spark_catalog.system.snapshot('default.pq', 'default.snap')",
        [D, S("default@pq"), X("default@snap")],
    ),
    (
        "CALL ice.system.snapshot('spark_catalog.default.pq', 'spark_catalog.default.snap')",
        [D, S("default@pq"), X("default@snap")],
    ),
]


@pytest.mark.parametrize("statement,expected", GOLDEN_SESSION, ids=[_id(g) for g in GOLDEN_SESSION])
def test_explain_locks_of_iceberg_statements_behind_the_session_catalog(spark, statement, expected):
    assert explain(spark, statement) == sorted(expected)


def test_a_call_runs_its_procedure_holding_its_locks(spark):
    stmt = "CALL spark_catalog.system.expire_snapshots(table => 'default.st', retain_last => 1)"
    got = requested(spark, lambda: spark.sql(stmt).collect())
    assert got[0] == [D, X("default@st")]
    assert show_locks(spark) == []


def test_a_call_waits_for_a_reader_of_its_table(spark):
    # another owner reads st (taken from the manager: LOCK TABLE resolves names through the
    # built-in catalog, which a hadoop-type SparkSessionCatalog's Iceberg tables are not in)
    from sparklock.locks.model import LockMode, LockRequest
    from sparklock.locks.objects import LockObject
    from sparklock.managers import get_manager
    from sparklock.service import config_of

    manager = get_manager(config_of({}))  # the session's (embedded) manager
    request = LockRequest(LockObject.of_table("default", "st"), LockMode.SHARED)
    held = manager.acquire([request], owner="reader", query_id="q")
    spark.conf.set("spark.sparklock.lock.numRetries", "1")  # a conflict fails at once
    before = spark.sql("SELECT count(*) FROM default.st.snapshots").collect()[0][0]
    try:
        with pytest.raises(Exception, match="LOCK_CONFLICT"):
            spark.sql("CALL spark_catalog.system.rewrite_data_files(table => 'st')").collect()
    finally:
        spark.conf.unset("spark.sparklock.lock.numRetries")
        manager.release(held)
    # the procedure did not run without its lock: no snapshot was committed
    assert spark.sql("SELECT count(*) FROM default.st.snapshots").collect()[0][0] == before


def test_dataframe_writes_behind_the_session_catalog(spark):
    df = spark.createDataFrame([(5, "e")], "id INT, p STRING")
    assert requested(spark, lambda: df.writeTo("st").append()) == [[D, X("default@st")]]
    assert requested(spark, lambda: df.writeTo("st").overwritePartitions()) == [
        [D, X("default@st")]
    ]


def _writes(spark) -> dict[str, object]:
    df = spark.createDataFrame([(6, "f")], "id INT, p STRING")
    return {
        "writeTo.append": lambda: df.writeTo(T).append(),
        "writeTo.overwritePartitions": lambda: df.writeTo(T).overwritePartitions(),
        "write.format(iceberg)": lambda: df.write.format("iceberg").mode("append").save(T),
    }


@pytest.mark.parametrize(
    "api", ["writeTo.append", "writeTo.overwritePartitions", "write.format(iceberg)"]
)
def test_dataframe_writes_to_a_named_catalog(spark, api):
    assert requested(spark, _writes(spark)[api]) == [on_ice(write=(T,))]


@needs_iceberg
def test_the_runtime_jar_comes_from_the_ivy_cache():
    jar = iceberg.runtime_jar()
    assert Path(jar).is_relative_to(iceberg.ivy_dir())
    assert iceberg.RUNTIME is not None and iceberg.RUNTIME.version in jar.name


# -- the facts the JVM reports for Iceberg's names (what the policy gets, whatever it locks) -----
def _facts(spark, action):
    from sparklock.spark.builder import callback_of

    with callback_of(spark).recording() as recorded:
        action()
    return [f for f in recorded if not f.enclosing_handles]


def _named(refs) -> set[tuple[str | None, str | None, str | None]]:
    return {(r.catalog, r.database, r.table) for r in refs}


BASE = ("ice", "db", "t")


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM ice.db.t.snapshots",
        "SELECT * FROM ice.db.t.files",
        "SELECT * FROM ice.db.t.branch_b1",
        "SELECT * FROM ice.db.t VERSION AS OF 'b1'",
    ],
)
def test_metadata_tables_and_snapshots_are_read_as_their_base_table(spark, statement):
    (facts,) = _facts(spark, lambda: spark.sql(statement).collect())
    assert _named(facts.reads) == {BASE}


def test_a_write_to_a_branch_is_a_write_of_its_base_table(spark):
    (facts,) = _facts(spark, lambda: spark.sql("INSERT INTO ice.db.t.branch_b1 VALUES (7, 'g')"))
    assert {(w.target.catalog, w.target.database, w.target.table) for w in facts.writes} == {BASE}


def test_a_call_reports_its_procedure_and_its_table_argument(spark):
    stmt = "CALL ice.system.expire_snapshots(retain_last => 1, table => 'db.t')"
    # the procedure's own queries are executions too (nested in the call where it holds locks)
    (facts,) = [f for f in _facts(spark, lambda: spark.sql(stmt).collect()) if f.command == "Call"]
    assert facts.command_class == "org.apache.iceberg.spark.procedures.ExpireSnapshotsProcedure"
    tables = {f.name: (f.catalog, f.database, f.table) for f in facts.fields}
    assert tables["table"] == BASE


def test_iceberg_ddl_reports_its_table(spark):
    (facts,) = _facts(spark, lambda: spark.sql("ALTER TABLE ice.db.t CREATE TAG tg"))
    assert facts.command == "CreateOrReplaceTag"
    assert {(f.catalog, f.database, f.table) for f in facts.fields if f.name == "table"} == {BASE}
