"""The JVM shim on a real local Spark session: facts, lock timing, enable switch, fail-closed.

One ``local[2]`` session for the module (``sparklock.configure``), parquet tables in a temporary
warehouse, the default embedded manager. Facts are captured on the real path: the JVM sends them
over py4j to ``PyLockCallback``, which records them (``recording()``) and hands them to the service.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from pyspark.sql import SparkSession  # noqa: E402

import sparklock  # noqa: E402
from sparklock.protocol.messages import (  # noqa: E402
    ExplicitLockRequest,
    UnlockRequest,
    read_request,
)
from sparklock.rules import facts as facts_contract  # noqa: E402
from sparklock.service import get_service  # noqa: E402
from sparklock.spark.builder import callback_of  # noqa: E402
from tests.support.contract import assert_records_match  # noqa: E402
from tests.support.locks import held  # noqa: E402
from tests.support.spark import SparkSpec, catalog_partition_specs  # noqa: E402
from tests.support.spark_versions import SPARK_LINE  # noqa: E402

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parent.parent


SPARK = SparkSpec(
    app="bridge",
    setup_sql=(
        "CREATE TABLE a (k INT, v STRING) USING parquet",
        "CREATE TABLE b (k INT, w STRING) USING parquet",
        "CREATE TABLE c (k INT) USING parquet",
        "CREATE TABLE pt (v INT, p STRING, q STRING) USING parquet PARTITIONED BY (p, q)",
        "CREATE TABLE u (k INT) USING parquet",
        "CREATE TABLE w (v INT, p STRING, q STRING) USING parquet PARTITIONED BY (p, q)",
        "INSERT INTO a VALUES (1, 'x'), (2, 'y')",
        "INSERT INTO b VALUES (1, 'z')",
        "INSERT INTO c VALUES (1), (5)",
        "INSERT INTO pt VALUES (1, '1', 'a'), (2, '1', 'b'), (3, '2', 'a')",
    ),
)


class WireView(Sequence):
    """Recorded ``Facts`` read back as the JSON objects the JVM sent (``facts.to_wire``): the
    assertions below read the wire format, through the Python dataclasses."""

    def __init__(self, recorded) -> None:
        self._recorded = recorded

    def __getitem__(self, i):
        return facts_contract.to_wire(self._recorded[i])

    def __len__(self) -> int:
        return len(self._recorded)

    def clear(self) -> None:
        self._recorded.clear()


@pytest.fixture
def record(spark):
    """Facts of every acquire made while the test runs, in order (as wire dicts)."""
    with callback_of(spark).recording() as facts:
        yield WireView(facts)


@pytest.fixture(autouse=True)
def clean_conf(spark):
    yield
    for key in ("spark.sparklock.enabled", "spark.sparklock.lock.numRetries"):
        spark.conf.unset(key)
    spark.conf.unset("spark.sparklock.lock.retryInterval")
    spark.conf.set("spark.sql.adaptive.enabled", "true")


def tables(refs) -> set[str]:
    return {f"{r['database']}.{r['table']}" for r in refs if r.get("kind") == "table"}


def only(facts):
    assert len(facts) == 1, [f["command"] for f in facts]
    return facts[0]


def write_of(facts) -> dict:
    f = only(facts)
    assert f["command"] == "InsertIntoHadoopFsRelationCommand"
    (write,) = f["writes"]
    return write


# -- the contract: Java records and Python dataclasses agree --------------------------------------
CONTRACT = {
    "Facts": facts_contract.Facts,
    "Facts$OwnerTable": facts_contract.OwnerTable,
    "Facts$TableRef": facts_contract.TableRef,
    "Facts$PathRef": facts_contract.PathRef,
    "Facts$ConnectorRef": facts_contract.ConnectorRef,
    "Facts$WriteRef": facts_contract.WriteRef,
    "Facts$TableField": facts_contract.TableField,
    "Facts$PathField": facts_contract.PathField,
    "Facts$ConnectorField": facts_contract.ConnectorField,
    "Facts$DatabaseField": facts_contract.DatabaseField,
    "Facts$PartitionSpecsField": facts_contract.PartitionSpecsField,
    "Facts$ConstraintsField": facts_contract.ConstraintsField,
    "Facts$ValueField": facts_contract.ValueField,
}


def test_java_records_and_python_dataclasses_name_the_same_fields(spark):
    assert_records_match(spark, CONTRACT)


def test_facts_round_trip_through_the_dataclasses(spark, tmp_path):
    """What the JVM sends, parsed and written back, is what it sent: no field lost or invented."""
    probes = spark.sparkContext._jvm.io.sparklock.shim.ShimProbes
    probes.install()
    statements = [
        "SELECT * FROM a JOIN b ON a.k = b.k",
        "SELECT * FROM pt WHERE p = '1'",
        "CREATE TABLE rt_w (v INT, p STRING, q STRING) USING parquet PARTITIONED BY (p, q)",
        "INSERT INTO rt_w PARTITION (p = '1', q) SELECT 1, 'a'",
        "ALTER TABLE rt_w ADD PARTITION (p = '8', q = 'y')",
        "CREATE OR REPLACE TEMP VIEW rt AS SELECT * FROM c",
        f"INSERT OVERWRITE DIRECTORY '{tmp_path}/dir' USING parquet SELECT * FROM a",
        f"SELECT * FROM parquet.`{tmp_path}/dir`",
        "CREATE DATABASE IF NOT EXISTS rt_db",
        "DROP DATABASE rt_db",
        "DROP VIEW rt",
        "DROP TABLE rt_w",
    ]
    kinds = set()
    for statement in statements:
        spark.sql(statement).collect()
        wire = json.loads(probes.lastFacts())
        assert facts_contract.to_wire(facts_contract.parse_facts(wire)) == wire, statement
        kinds |= {
            (part, ref["kind"]) for part in ("reads", "writes", "fields") for ref in wire[part]
        }
    assert kinds >= {("reads", "table"), ("reads", "path"), ("writes", "table"), ("writes", "path")}
    assert {k for p, k in kinds if p == "fields"} >= {
        "table",
        "partitionSpecs",
        "value",
        "database",
    }


# -- facts: reads ------------------------------------------------------------------------------
def test_select_with_join_subqueries_and_cte_reads_every_table_once(spark, record):
    spark.sql(
        "WITH x AS (SELECT * FROM a) SELECT * FROM x JOIN b ON x.k = b.k "
        "WHERE x.k IN (SELECT k FROM c) AND x.k < (SELECT max(k) FROM c)"
    ).collect()
    f = only(record)
    assert tables(f["reads"]) == {"default.a", "default.b", "default.c"}
    assert f["writes"] == [] and f["fields"] == []
    assert f["executionId"] == f["rootExecutionId"] and f["executionId"] is not None
    assert f["sql"].startswith("WITH x AS")
    assert f["session"] == spark._jsparkSession.sessionUUID()
    assert f["currentDatabase"] == "default"
    assert f["enclosingHandles"] == []
    a = next(r for r in f["reads"] if r["table"] == "a")
    assert a["catalog"] == "spark_catalog" and a["provider"] == "parquet"
    assert a["partitionColumns"] == [] and a["partitions"] is None
    assert a["location"].startswith("file:") and a["isView"] is False and a["isTemp"] is False


def test_scalar_subquery_without_aqe_locks_once(spark, record):
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.sql("SELECT k FROM a WHERE k < (SELECT max(k) FROM c)").collect()
    assert tables(only(record)["reads"]) == {"default.a", "default.c"}


def test_pruned_read_lists_only_the_selected_partitions(spark, record):
    spark.sql("SELECT * FROM pt WHERE p = '1'").collect()
    spark.sql("SELECT * FROM pt WHERE q = 'a'").collect()
    spark.sql("SELECT * FROM pt").collect()
    by_p, by_q, whole = ([r for r in f["reads"] if r["table"] == "pt"][0] for f in record)
    assert by_p["partitionColumns"] == ["p", "q"]
    key = lambda s: (s["p"], s["q"])  # noqa: E731
    assert sorted(by_p["partitions"], key=key) == [{"p": "1", "q": "a"}, {"p": "1", "q": "b"}]
    assert sorted(by_q["partitions"], key=key) == [{"p": "1", "q": "a"}, {"p": "2", "q": "a"}]
    # not pruned: every partition the catalog lists (each is read, so each is locked)
    assert sorted(whole["partitions"], key=key) == [
        {"p": "1", "q": "a"},
        {"p": "1", "q": "b"},
        {"p": "2", "q": "a"},
    ]


#: Partition values Spark escapes in directory and partition names, a non-ASCII one, the default
#: partition (NULL and the empty string) in either column.
ODD_PARTITIONS = "(1, 'a/b', 1), (2, 'x=y', 2), (3, '50%', NULL), (4, 'c:d', 4), (5, 'sp ace', 5), \
(6, 'ü', 6), (7, NULL, 7), (8, '', 8), (9, 'q#?*[]', 9)"


def _spec_key(spec):
    return sorted((k, str(v)) for k, v in spec.items())


def test_full_read_names_every_partition_as_the_catalog_holds_it(spark, record):
    """A full read names exactly the specs ``listPartitions`` holds, whatever the values (the
    in-memory catalog hands them over as they are; a metastore's names are parsed: the same
    check in ``test_spark_commands_hive``)."""
    spark.sql("CREATE TABLE odd (v INT, s STRING, n INT) USING parquet PARTITIONED BY (s, n)")
    try:
        spark.sql(f"INSERT INTO odd VALUES {ODD_PARTITIONS}")
        record.clear()
        assert spark.sql("SELECT count(*) FROM odd").collect()[0][0] == 9
        (read,) = [r for r in only(record)["reads"] if r["table"] == "odd"]
        expected = catalog_partition_specs(spark, "odd")
        assert len(expected) == 9
        assert sorted(read["partitions"], key=_spec_key) == sorted(expected, key=_spec_key)
        assert all(list(spec) == ["s", "n"] for spec in read["partitions"])  # column order
    finally:
        spark.sql("DROP TABLE IF EXISTS odd")


def test_views_report_the_view_and_what_it_reads(spark, record):
    spark.sql("CREATE OR REPLACE VIEW va AS SELECT * FROM a")
    spark.sql("CREATE OR REPLACE TEMP VIEW tb AS SELECT * FROM b")
    record.clear()
    spark.sql("SELECT * FROM va JOIN tb ON va.k = tb.k").collect()
    reads = only(record)["reads"]
    va = next(r for r in reads if r["table"] == "va")
    tb = next(r for r in reads if r["table"] == "tb")
    assert va["isView"] and not va["isTemp"] and va["database"] == "default"
    assert tb["isView"] and tb["isTemp"] and tb["database"] is None
    assert {"default.a", "default.b"} <= tables(reads)


# -- facts: writes -----------------------------------------------------------------------------
def test_insert_static_partition(spark, record):
    spark.sql("INSERT INTO w PARTITION (p = '1', q = 'a') VALUES (1)")
    write = write_of(record)
    assert (write["database"], write["table"]) == ("default", "w")
    assert write["partitionColumns"] == ["p", "q"]
    assert write["staticPartition"] == {"p": "1", "q": "a"}
    assert write["dynamicColumns"] == []
    assert write["overwrite"] is False and write["fileBased"] is True
    assert only(record)["fields"] == []  # the write is fully described in "writes"


def test_insert_dynamic_partitions(spark, record):
    spark.sql("INSERT INTO w VALUES (2, '2', 'b')")
    write = write_of(record)
    assert write["staticPartition"] == {}
    assert write["dynamicColumns"] == ["p", "q"]


def test_insert_partial_static_prefix(spark, record):
    spark.sql("INSERT INTO w PARTITION (p = '3', q) VALUES (3, 'c')")
    write = write_of(record)
    assert write["staticPartition"] == {"p": "3"}
    assert write["dynamicColumns"] == ["q"]


def test_insert_unpartitioned_and_overwrite(spark, record):
    spark.sql("INSERT INTO u VALUES (1)")
    spark.sql("INSERT OVERWRITE TABLE u VALUES (2)")
    into, over = (f["writes"][0] for f in record)
    assert into["partitionColumns"] == [] and into["staticPartition"] == {}
    assert into["overwrite"] is False and over["overwrite"] is True
    assert over["dynamicPartitionOverwrite"] is False


def test_insert_select_from_the_same_table(spark, record):
    spark.sql("INSERT INTO pt PARTITION (p = '3', q) SELECT v, q FROM pt WHERE p = '1'")
    f = only(record)
    (read,) = [r for r in f["reads"] if r["table"] == "pt"]
    assert sorted(read["partitions"], key=lambda s: s["q"]) == [
        {"p": "1", "q": "a"},
        {"p": "1", "q": "b"},
    ]
    (write,) = f["writes"]
    assert write["table"] == "pt" and write["staticPartition"] == {"p": "3"}


def test_dataframe_writer_insert_into(spark, record):
    spark.table("a").select("k").write.insertInto("u")
    write = write_of(record)
    assert (write["table"], write["overwrite"]) == ("u", False)
    assert tables(only(record)["reads"]) == {"default.a"}


# -- facts: DDL fields (generic, by field name) ----------------------------------------------
def test_ddl_fields_by_name(spark, record):
    spark.sql("ALTER TABLE pt ADD PARTITION (p = '9', q = 'z')")
    spark.sql("ALTER TABLE pt DROP PARTITION (p = '9', q = 'z')")
    spark.sql("CREATE DATABASE IF NOT EXISTS bridge_db")
    spark.sql("DROP DATABASE bridge_db")
    add, drop, create_db, drop_db = record
    assert add["command"] == "AlterTableAddPartitionCommand"
    fields = {f["name"]: f for f in add["fields"]}
    assert fields["tableName"]["kind"] == "table" and fields["tableName"]["table"] == "pt"
    assert fields["tableName"]["exists"] is True
    assert fields["tableName"]["partitionColumns"] == ["p", "q"]
    assert fields["partitionSpecsAndLocs"] == {
        "name": "partitionSpecsAndLocs",
        "kind": "partitionSpecs",
        "specs": [{"p": "9", "q": "z"}],
    }
    assert {f["name"]: f for f in drop["fields"]}["specs"]["specs"] == [{"p": "9", "q": "z"}]
    assert {f["name"]: f for f in create_db["fields"]}["name"]["kind"] == "database"
    assert {f["name"]: f for f in drop_db["fields"]}["namespace"]["database"] == "bridge_db"


def test_temp_view_type_is_reported_as_a_value(spark, record):
    spark.sql("CREATE OR REPLACE TEMP VIEW tv2 AS SELECT * FROM c")
    f = only(record)
    fields = {x["name"]: x for x in f["fields"]}
    assert f["command"] == "CreateViewCommand"
    assert fields["viewType"] == {"name": "viewType", "kind": "value", "value": "LocalTempView"}
    assert "plan" not in fields  # the view's query is in reads, not a field
    assert tables(f["reads"]) == {"default.c"}


# -- nesting and re-entry ----------------------------------------------------------------------
def test_nested_ctas_insert_is_acquired_with_the_enclosing_handles(spark, record):
    spark.sql("CREATE TABLE ctas_sql USING parquet AS SELECT * FROM a")
    outer, inner = record
    assert outer["command"] == "CreateDataSourceTableAsSelectCommand"
    assert inner["command"] == "InsertIntoHadoopFsRelationCommand"
    assert inner["rootExecutionId"] == outer["executionId"] != inner["executionId"]
    assert outer["enclosingHandles"] == []
    assert len(inner["enclosingHandles"]) == 1
    assert inner["writes"][0]["kind"] == "path"  # the table is created after the data
    assert tables(inner["reads"]) == {"default.a"}
    assert get_service().open_handles() == 0


def test_save_as_table_does_not_wait_for_its_own_locks(spark, record):
    spark.conf.set("spark.sparklock.lock.numRetries", "1")
    spark.conf.set("spark.sparklock.lock.retryInterval", "10ms")
    try:
        spark.table("a").write.saveAsTable("ctas_df")
    finally:
        facts = list(record)
        # Spark 4.1+ wraps saveAsTable in SaveAsV1TableCommand; 3.5/4.0 run the CTAS directly.
        outer = "SaveAsV1TableCommand"
        if SPARK_LINE < (4, 1):
            outer = "CreateDataSourceTableAsSelectCommand"
        assert facts[0]["command"] == outer
        assert all(f["rootExecutionId"] == facts[0]["executionId"] for f in facts)
        assert all(f["enclosingHandles"] for f in facts[1:])
        assert get_service().open_handles() == 0
    assert spark.table("ctas_df").count() == spark.table("a").count()


def test_collecting_an_eager_command_result_does_not_lock_again(spark, record):
    df = spark.sql("INSERT INTO u VALUES (7)")
    df.collect()  # the cached result rows: not even a call
    assert [f["command"] for f in record] == ["InsertIntoHadoopFsRelationCommand"]
    df.count()  # a new query over those rows: it names nothing, so Python is not called
    assert len(record) == 1


def test_explain_locks_nothing(spark, record):
    spark.sql("EXPLAIN SELECT * FROM a").collect()
    spark.table("a").explain()
    assert list(record) == []


def test_every_action_locks_anew(spark, record):
    df = spark.table("a").where("k > 0")
    df.collect()
    df.count()
    df.take(1)
    df.tail(1)
    assert len(record) == 4
    assert all(tables(f["reads"]) == {"default.a"} for f in record)
    assert len({f["executionId"] for f in record}) == 4


# -- timing ------------------------------------------------------------------------------------
SLOW = "reflect('java.lang.Thread', 'sleep', CAST(400 AS BIGINT))"


@pytest.mark.parametrize(
    "statement",
    [
        f"SELECT k, {SLOW} FROM a",
        f"INSERT INTO u SELECT k FROM a WHERE {SLOW} IS NULL",
    ],
    ids=["select", "insert"],
)
def test_locks_are_held_while_running_and_released_before_the_call_returns(spark, statement):
    outcome: dict = {}

    def run():
        try:
            spark.sql(statement).collect()
            outcome["after"] = held()  # the very next thing this thread does
        except Exception as e:  # noqa: BLE001
            outcome["error"] = e

    runner = threading.Thread(target=run)
    runner.start()
    seen: set = set()
    while runner.is_alive():
        seen.update(held())
        time.sleep(0.01)
    runner.join()
    assert "error" not in outcome, outcome.get("error")
    assert ("default@a", "SHARED") in seen
    if statement.startswith("INSERT"):
        assert ("default@u", "EXCLUSIVE") in seen
    assert outcome["after"] == []
    assert get_service().open_handles() == 0


def test_rdd_paths_hold_until_the_execution_ends(spark, record):
    rows = list(spark.table("a").toLocalIterator())
    assert len(rows) == 2
    assert tables(only(record)["reads"]) == {"default.a"}
    deadline = time.monotonic() + 5
    while get_service().open_handles() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert get_service().open_handles() == 0  # released by the query-end listener
    record.clear()
    assert spark.table("a").rdd.count() == 2  # no execution id: locks are only checked
    assert tables(only(record)["reads"]) == {"default.a"}
    assert only(record)["executionId"] is None
    assert get_service().open_handles() == 0


# -- errors and the switch ---------------------------------------------------------------------
def test_a_conflict_reaches_python_with_its_code(spark, record):
    service = get_service()
    obj = {"database": "default", "table": "a", "partition": []}
    base = {"session": "someone-else", "conf": {}}
    service.lock(read_request(ExplicitLockRequest, {**base, "mode": "EXCLUSIVE", "object": obj}))
    try:
        spark.conf.set("spark.sparklock.lock.numRetries", "1")
        spark.conf.set("spark.sparklock.lock.retryInterval", "50ms")
        with pytest.raises(Exception) as select_error:
            spark.sql("SELECT * FROM a").collect()
        with pytest.raises(Exception) as insert_error:
            spark.sql("INSERT INTO a VALUES (9, 'z')")
    finally:
        service.unlock(read_request(UnlockRequest, {**base, "object": obj}))
    for err in (select_error, insert_error):
        assert "LOCK_CONFLICT: could not acquire" in str(err.value)
        assert "default@a" in str(err.value)
    assert spark.sql("SELECT count(*) FROM a").collect()[0][0] == 2  # the insert never ran
    assert get_service().open_handles() == 0


def test_disabled_at_runtime_calls_nothing(spark, record):
    probes = spark.sparkContext._jvm.io.sparklock.shim.ShimProbes
    probes.install()
    spark.sql("SELECT * FROM a").collect()  # a last facts to compare with
    before = probes.lastFacts()
    assert before is not None and len(record) == 1
    spark.conf.set("spark.sparklock.enabled", "false")
    spark.sql("SELECT * FROM a").collect()
    spark.sql("INSERT INTO u VALUES (3)")
    spark.table("a").rdd.count()
    assert len(record) == 1
    assert probes.lastFacts() == before
    spark.conf.set("spark.sparklock.enabled", "true")
    spark.sql("SELECT * FROM a").collect()
    assert len(record) == 2
    assert record[1]["conf"] == {"spark.sparklock.enabled": "true"}


def test_new_sessions_and_threads_share_the_attached_service(spark, record):
    other = spark.newSession()
    errors: list = []

    def work(i):
        try:
            (other if i % 2 else spark).sql("SELECT count(*) FROM b").collect()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(record) == 4
    assert {f["session"] for f in record} == {
        spark._jsparkSession.sessionUUID(),
        other._jsparkSession.sessionUUID(),
    }


def test_no_callback_attached_fails_closed(tmp_path):
    """A session with the extension but without sparklock.configure (its own JVM)."""
    from sparklock import shim

    script = textwrap.dedent(
        f"""
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]")
                 .config("spark.jars", {str(shim.jar_path())!r})
                 .config("spark.sql.extensions", {shim.EXTENSION_CLASS!r})
                 .config("spark.ui.enabled", "false")
                 .config("spark.sql.warehouse.dir", {str(tmp_path / "wh")!r})
                 .getOrCreate())
        try:
            spark.sql("SELECT 1").collect()
            print("NO ERROR")
        except Exception as e:
            print("ERROR", str(e).splitlines()[1] if "\\n" in str(e) else str(e))
        spark.conf.set("spark.sparklock.enabled", "false")
        print("DISABLED", spark.sql("SELECT 1").collect()[0][0])
        spark.stop()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    error_line = next(x for x in proc.stdout.splitlines() if x.startswith(("ERROR", "NO ERROR")))
    assert "SPARKLOCK_NOT_ATTACHED" in error_line
    assert "sparklock.configure(" in error_line
    assert "DISABLED 1" in proc.stdout


def test_path_reads_and_writes(spark, record, tmp_path):
    target = tmp_path / "out"
    spark.table("a").write.parquet(str(target))
    spark.read.parquet(str(target)).collect()
    write, read = record
    (w,) = write["writes"]
    assert w["kind"] == "path" and w["path"].endswith("/out") and w["fileBased"] is True
    assert w["overwrite"] is False and w["partitionColumns"] == []
    assert tables(write["reads"]) == {"default.a"}
    (r,) = read["reads"]
    assert r["kind"] == "path" and r["path"].endswith("/out")


# -- configure and the jar build (no new session) -----------------------------------------------
def test_configure_appends_to_existing_jars_and_extensions(monkeypatch):
    from sparklock import shim

    builder = SparkSession.builder.config("spark.jars", "/x/other.jar").config(
        "spark.sql.extensions", "com.example.Ext"
    )
    assert sparklock.configure(builder) is builder
    jars = builder._options["spark.jars"].split(",")
    assert jars == ["/x/other.jar", str(shim.jar_path())]
    assert builder._options["spark.sql.extensions"] == f"com.example.Ext,{shim.EXTENSION_CLASS}"
    wrapped = builder.getOrCreate
    sparklock.configure(builder)  # idempotent
    assert builder.getOrCreate is wrapped
    assert builder._options["spark.jars"].split(",") == jars


def test_a_cached_jar_needs_no_javac_and_a_missing_one_says_what_to_do(monkeypatch, tmp_path):
    from sparklock import shim

    jar = shim.jar_path()
    assert jar.is_file() and jar.name == "sparklock-shim.jar"
    assert shim.jar_path() == jar  # same key: reused, not rebuilt
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert shim.jar_path() == jar  # a Java runtime without javac uses the cached jar
    monkeypatch.setenv("SPARKLOCK_SHIM_CACHE", str(tmp_path / "empty"))
    version = shim.spark_version()
    with pytest.raises(shim.ShimBuildError) as e:
        shim.jar_path()
    line = str(e.value)
    assert "\n" not in line and line.startswith(f"SHIM_BUILD_FAILED: Spark {version}: no sparklock")
    assert "javac was not found" in line and "JDK 17+" in line and "SPARKLOCK_SHIM_JAR" in line
    monkeypatch.setenv("SPARKLOCK_SHIM_JAR", str(jar))
    assert shim.jar_path() == jar  # a prebuilt jar needs no javac
