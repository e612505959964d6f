"""A JDBC write whose lease lapses during its job (docs/fencing.md, "JDBC writes"), on real
ZooKeeper and Derby (in pyspark's jars, in-memory, in the driver's JVM with the local tasks).

A JDBC write has no commit on the driver: each task commits its own transaction after its last
row. The test lets each task insert some rows (seen through a READ UNCOMMITTED connection),
silences ZooKeeper's proxy so that the JVM's lease lapses, and checks that the fence's
cancellation killed the tasks before their commit: the statement fails with ``LOCKS_LOST`` and
the table holds none of its rows (the open transactions were rolled back).
"""

from __future__ import annotations

import threading
import uuid

import pytest

from tests.support.lease_faults import heal_and_reconnect, lease_conf, leased, wait_until
from tests.support.nemesis import trials
from tests.support.spark import build_session

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper, pytest.mark.nemesis]

DRIVER = "org.apache.derby.jdbc.EmbeddedDriver"


@pytest.fixture(scope="module")
def spark(tmp_path_factory, proxy):
    warehouse = tmp_path_factory.mktemp("jdbc_write_lease") / "warehouse"
    session = build_session("test_jdbc_write_lease", warehouse)
    with leased(session, lease_conf(proxy, "jdbc_lease")):
        yield session
    session.stop()


def count(spark, url: str, table: str, uncommitted: bool = False) -> int:
    """Rows of ``table`` read straight from Derby on the driver (no Spark, no lock)."""
    jvm = spark._jvm
    jvm.java.lang.Class.forName(DRIVER)
    conn = jvm.java.sql.DriverManager.getConnection(url)
    try:
        if uncommitted:
            conn.setTransactionIsolation(jvm.java.sql.Connection.TRANSACTION_READ_UNCOMMITTED)
        result = conn.createStatement().executeQuery(f"SELECT COUNT(*) FROM {table}")
        result.next()
        return int(result.getInt(1))
    finally:
        conn.close()


def test_a_fenced_jdbc_write_leaves_no_rows(spark, proxy):
    for _ in range(trials()):
        fenced_jdbc_write(spark, proxy)


def fenced_jdbc_write(spark, proxy) -> None:
    url = f"jdbc:derby:memory:jdbc_lease_{uuid.uuid4().hex[:8]};create=true"
    jvm = spark._jvm
    jvm.java.lang.Class.forName(DRIVER)
    conn = jvm.java.sql.DriverManager.getConnection(url)
    conn.createStatement().execute("CREATE TABLE rows_a (id BIGINT, slept VARCHAR(8))")
    conn.close()
    bridge = jvm.io.sparklock.shim.SparkLockBridge
    fences_before = len(bridge.leaseFences().splitlines())
    outcome: dict[str, object] = {}
    # 2 tasks of 30 rows, 0.3 s per row (a JVM sleep: rows reach the JDBC writer one by one)
    rows = spark.sql(
        "SELECT id, CAST(reflect('java.lang.Thread', 'sleep', CAST(300 AS BIGINT)) AS STRING) "
        "AS slept FROM range(0, 60, 1, 2)"
    )

    def write() -> None:
        try:
            rows.write.jdbc(
                url, "rows_a", mode="append", properties={"driver": DRIVER, "batchsize": "1"}
            )
            outcome["ok"] = True
        except Exception as e:  # noqa: BLE001 - the answer under test
            outcome["error"] = str(e)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_until(
            lambda: count(spark, url, "rows_a", uncommitted=True) >= 4,
            60,
            "the tasks to insert rows (uncommitted)",
        )
        proxy.silence()  # kazoo hears nothing more: the JVM's lease lapses on its own
        wait_until(
            lambda: len(bridge.leaseFences().splitlines()) > fences_before, 30, "the JVM to fence"
        )
        writer.join(60)
    finally:
        heal_and_reconnect(spark, proxy)
        writer.join(60)
    assert "LOCKS_LOST" in str(outcome.get("error")), outcome
    assert count(spark, url, "rows_a") == 0, "a fenced task committed its rows"
