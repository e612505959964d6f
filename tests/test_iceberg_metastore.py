"""An Iceberg ``HiveCatalog`` on the metastore sparklock locks in (``manager=metastore``).

One Spark driver process (``tests.support.driver``) has the catalog ``ice`` =
Iceberg's ``SparkCatalog`` with ``type=hive`` on the tests' Hive 4.0.1 metastore, and Iceberg's
``SparkSessionCatalog`` as ``spark_catalog`` on the same metastore (neither names a ``uri``: the
session's ``hive.metastore.uris``, as Iceberg falls back); the metastore's lock API is also its
lock manager; Hive's own lock client (the harness of ``test_metastore_interop``)
locks the same metastore. Its tables are metastore tables (``db.t``), so sparklock must lock
exactly what Hive's client locks, and Iceberg's commits (which would take a metastore lock of
their own) must complete under the lock the statement already holds.

Iceberg's ``HiveCatalog`` calls the metastore through the Hive client on the driver's class path:
Spark's own is Hive 2.3's, whose ``get_table`` Hive 4 removed (``TApplicationException: Invalid
method name: 'get_table'``), and Hive 4's ``hive-common`` renamed the setting Iceberg reads
(``NoSuchFieldError: METASTOREURIS``). What works: Hive 4's
``hive-standalone-metastore-common`` jar (its ``HiveMetaStoreClient``) ahead of Spark's on
``spark.driver.extraClassPath``, Hive 2.3's ``HiveConf`` left as it is.
"""

from __future__ import annotations

import time

import pytest

from tests.support import iceberg as iceberg_support
from tests.support import metastore
from tests.support.driver import Driver
from tests.support.locks import wait_for
from tests.support.metastore_harness import MetastoreLockHarness

pytestmark = [pytest.mark.metastore, pytest.mark.iceberg]

DB = "icems"
#: Iceberg's own wait for its commit lock (``iceberg.hive.lock-timeout-ms``): 3 minutes
ICEBERG_LOCK_TIMEOUT = 180.0
#: queue for up to 60 s (every wait below ends well before)
PATIENT = {"spark.sparklock.lock.numRetries": "600", "spark.sparklock.lock.retryInterval": "100ms"}


def metastore_client_jar() -> str:
    """Hive 4's metastore client jar, from the metastore release the tests run (its lib has
    it: nothing more to resolve)."""
    [jar] = sorted((metastore.install() / "lib").glob("hive-standalone-metastore-common-*.jar"))
    return str(jar)


@pytest.fixture(scope="module")
def driver(request, tmp_path_factory):
    """The driver with ``ice`` on the metastore, and the table ``ice.icems.t`` (3 rows); the
    skips come before the metastore is started."""
    if iceberg_support.MISSING:
        pytest.skip(iceberg_support.MISSING)
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        pytest.skip(
            f"pyspark {pyspark.__version__}: Iceberg's HiveCatalog cannot reach a Hive 4 "
            "metastore from it: Spark's Hive 2.3 client calls get_table, which Hive 4 removed, "
            "and Hive 4's client needs libthrift 0.14+ (org.apache.thrift.transport.layered."
            "TFramedTransport), while pyspark 3.5 ships libthrift 0.12"
        )
    hive_metastore = request.getfixturevalue("hive_metastore")
    root = tmp_path_factory.mktemp("iceberg-metastore")
    conf = {
        "spark.jars": str(iceberg_support.runtime_jar()),
        "spark.driver.extraClassPath": metastore_client_jar(),
        "spark.sql.extensions": iceberg_support.iceberg.EXTENSION,
        "spark.sql.catalog.ice": iceberg_support.iceberg.CATALOG_CLASS,
        "spark.sql.catalog.ice.type": "hive",
        "spark.sql.catalog.ice.uri": hive_metastore.uri,
        "spark.sql.catalog.ice.warehouse": str(root / "iceberg"),
        # Iceberg behind the session catalog too, on the same metastore (no uri: the session's)
        "spark.sql.catalog.spark_catalog": iceberg_support.iceberg.SESSION_CATALOG_CLASS,
        "spark.sql.catalog.spark_catalog.type": "hive",
        "spark.hadoop.hive.metastore.uris": hive_metastore.uri,
        "spark.sparklock.manager": "metastore",
        **PATIENT,
    }
    d = Driver(None, None, str(root / "spark"), conf=conf, start_timeout=300)
    try:
        for sql in (
            f"CREATE NAMESPACE ice.{DB}",
            f"CREATE TABLE ice.{DB}.t (id INT, v STRING) USING iceberg",
            f"INSERT INTO ice.{DB}.t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        ):
            ok(d, sql)
        yield d
    finally:
        d.close()


@pytest.fixture(scope="module")
def hive(driver, hive_metastore):
    with MetastoreLockHarness(hive_metastore.uri) as harness:
        yield harness


def ok(driver: Driver, sql: str, timeout: float = 120.0) -> list:
    return driver.ok(sql, timeout)


def hive_rows(hive: MetastoreLockHarness) -> list:
    """Hive's SHOW LOCKS of the module's database (as Hive names the objects)."""
    return [r for r in hive.show() if r.db == DB]


def spark_locks(hive: MetastoreLockHarness, state: str) -> list:
    """Hive's rows of a sparklock statement's lock on ``t`` in ``state`` (its agent info says
    it: ``<query id>:s=<session>:l=I:...``, not Iceberg's commit lock)."""
    return [r for r in hive_rows(hive) if r.table == "t" and r.state == state and ":l=I" in r.agent]


def timed(driver: Driver, sql: str) -> float:
    started = time.monotonic()
    ok(driver, sql)
    return time.monotonic() - started


def names(driver: Driver, sql: str) -> set[tuple[str, str]]:
    """(name, mode) of every row ``sql`` (EXPLAIN LOCKS, SHOW LOCKS) answers."""
    return {(r[0], r[1]) for r in ok(driver, sql)}


def test_a_lock_on_the_table_is_the_metastore_s_own_table_lock(driver, hive):
    """LOCK TABLE ice.icems.t holds what Hive's lock client locks for ``icems.t``; sparklock
    still names it as written, and Hive's client waits for it."""
    table = f"ice.{DB}.t"
    assert (table, "EXCLUSIVE") in names(
        driver, f"EXPLAIN LOCKS INSERT INTO {table} VALUES (9, 'z')"
    )
    ok(driver, f"LOCK TABLE {table} EXCLUSIVE")
    try:
        assert [(r.table, r.partition, r.type, r.state) for r in hive_rows(hive)] == [
            ("t", None, "EXCLUSIVE", "ACQUIRED")
        ]
        assert names(driver, f"SHOW LOCKS {table}") == {(table, "EXCLUSIVE")}
        assert (table, "EXCLUSIVE") in names(driver, "SHOW LOCKS")
        reader = hive.statement("hive-read", "bob", f"{DB}@t:R")
        assert reader.state == "WAITING" and not hive.wait(reader, 0.5)
    finally:
        ok(driver, f"UNLOCK TABLE {table}")
    assert hive.wait(reader, 30)
    # Hive's own lock, listed by sparklock under the name the user asks about
    assert names(driver, f"SHOW LOCKS {table}") == {(table, "SHARED")}
    hive.release(reader)


def test_hive_waits_for_a_spark_insert_and_a_spark_merge_waits_for_hive(driver, hive):
    table = f"ice.{DB}.t"
    sql = f"INSERT INTO {table} SELECT slow(4, 3), 'slow'"
    assert driver.send({"op": "bg", "sql": sql, "id": "insert"})["started"]
    # the statement's own lock, taken before its job (Iceberg's commit lock comes at the end)
    assert wait_for(lambda: spark_locks(hive, "ACQUIRED"), 60, 0.05)
    writer = hive.statement("hive-insert", "bob", f"{DB}@t:X")
    assert writer.state == "WAITING"
    answer = driver.send({"op": "result", "id": "insert", "timeout": 120}, 130)
    assert answer["ok"], answer.get("error")
    assert hive.wait(writer, 30)  # granted once the Spark insert committed and released
    merge = (
        f"MERGE INTO {table} t USING (SELECT 4 AS id, 'merged' AS v) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v"
    )
    assert driver.send({"op": "bg", "sql": merge, "id": "merge"})["started"]
    assert wait_for(lambda: spark_locks(hive, "WAITING"), 60, 0.05)  # queued before it runs
    waiting = driver.send({"op": "result", "id": "merge", "timeout": 1}, 30)
    assert waiting == {"ok": False, "error": "timeout"}
    hive.release(writer)
    answer = driver.send({"op": "result", "id": "merge", "timeout": 120}, 130)
    assert answer["ok"], answer.get("error")
    assert ok(driver, f"SELECT v FROM {table} WHERE id = 4") == [["merged"]]


def test_iceberg_commits_under_sparklock_s_lock_complete(driver, hive):
    """Iceberg's own commit lock would queue behind the statement's EXCLUSIVE on the same
    metastore table for Iceberg's lock timeout; it is off for this catalog, so each commit takes
    seconds, and the metastore's conditional commit still checks the metadata pointer."""
    table = f"ice.{DB}.t"
    key = "spark.sql.catalog.ice.hadoop.iceberg.engine.hive.lock-enabled"
    assert ok(driver, f"SET `{key}`") == [[key, "false"]]
    ok(driver, f"LOCK TABLE {table} EXCLUSIVE")
    try:
        assert ("t", "EXCLUSIVE") in {(r.table, r.type) for r in hive_rows(hive)}
        took = [
            timed(driver, sql)
            for sql in (
                f"INSERT INTO {table} VALUES (20, 'x'), (21, 'y')",
                f"UPDATE {table} SET v = 'z' WHERE id = 21",
                f"DELETE FROM {table} WHERE id = 20",
            )
        ]
    finally:
        ok(driver, f"UNLOCK TABLE {table}")
    assert max(took) < ICEBERG_LOCK_TIMEOUT / 6, took
    assert ok(driver, f"SELECT id, v FROM {table} WHERE id >= 20") == [[21, "z"]]


def test_the_same_table_behind_the_session_catalog_is_the_same_lock(driver, hive):
    """``spark_catalog`` = Iceberg's ``SparkSessionCatalog`` on the same metastore: its
    ``icems.t`` is ``ice.icems.t`` and Hive's ``icems.t``, so a write to it waits for Hive's lock
    client, and its commits too run without Iceberg's own lock."""
    key = "spark.sql.catalog.spark_catalog.hadoop.iceberg.engine.hive.lock-enabled"
    assert ok(driver, f"SET `{key}`") == [[key, "false"]]
    writer = hive.statement("hive-writer", "bob", f"{DB}@t:X")
    assert writer.state == "ACQUIRED"
    try:
        sql = f"INSERT INTO spark_catalog.{DB}.t VALUES (30, 'session')"
        assert driver.send({"op": "bg", "sql": sql, "id": "session"})["started"]
        assert wait_for(lambda: spark_locks(hive, "WAITING"), 60, 0.05)
    finally:
        hive.release(writer)
    answer = driver.send({"op": "result", "id": "session", "timeout": 60}, 70)
    assert answer["ok"], answer.get("error")
    assert ok(driver, f"SELECT v FROM ice.{DB}.t WHERE id = 30") == [["session"]]
