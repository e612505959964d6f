"""Metrics, listener events and the SQL metric, read through Spark's own channels.

One local session with its UI on (a free port of 127.0.0.1), the ``PrometheusServlet`` sink and
an uncompressed event log. Each test makes real lock traffic -- a LOCK TABLE in another session,
a statement refused with LOCK_CONFLICT, one that waits and is granted when the holder unlocks, a
wait cancelled -- and then reads what Spark shows: ``/metrics/json/`` and
``/metrics/prometheus/`` over HTTP, the event log file (each sparklock event also read back
with Spark's ``JsonProtocol``, as the History Server replays it), the REST API's SQL plan nodes.
Counters are compared before and after (the module's setup statements lock too).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid

import pytest
from kazoo.client import KazooClient  # noqa: E402

import sparklock  # noqa: E402
from sparklock import telemetry  # noqa: E402
from sparklock.service import get_service  # noqa: E402
from sparklock.spark import telemetry_sink  # noqa: E402
from tests.support.locks import session_manager, wait_for  # noqa: E402
from tests.support.spark import SparkSpec, register_udfs, zookeeper_conf  # noqa: E402
from tests.support.spark_ui import (  # noqa: E402
    UI_CONF,
    event_log_lines,
    get,
    sparklock_metrics,
    sql_executions,
)
from tests.support.zookeeper import ZooKeeperServer  # noqa: E402

pytestmark = pytest.mark.spark

EVENT_LOG = tempfile.mkdtemp(prefix="sparklock-eventlog-")

SPARK = SparkSpec(
    app="metrics",
    conf={**UI_CONF, "spark.eventLog.dir": EVENT_LOG},
    setup_sql=(
        "CREATE TABLE t (k INT) USING parquet",
        "INSERT INTO t VALUES (1), (2)",
        "CREATE TABLE u (k INT) USING parquet",
    ),
)

GRANTED = "io.sparklock.shim.telemetry.SparkListenerLockGranted"
RELEASED = "io.sparklock.shim.telemetry.SparkListenerLockReleased"
REFUSED = "io.sparklock.shim.telemetry.SparkListenerLockRefused"


@pytest.fixture(scope="module", autouse=True)
def event_log_dir():
    """The event log directory; once the module's session stopped (this fixture is set up before
    it, so torn down after it), removed, and the static keys this module set taken back out of
    the JVM's system properties (the first SparkContext of a JVM leaves its conf there, and later
    modules' sessions must not log events to a removed directory)."""
    yield EVENT_LOG
    from pyspark import SparkContext

    if SparkContext._jvm is not None:
        system = SparkContext._jvm.java.lang.System
        for key in (*UI_CONF, "spark.eventLog.dir"):
            system.clearProperty(key)
    shutil.rmtree(EVENT_LOG, ignore_errors=True)


def session(spark, **conf: str):
    s = spark.newSession()
    for key, value in conf.items():
        s.conf.set(key, value)
    return s


def in_thread(fn):
    box: dict = {}

    def run():
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def delta(after: dict, before: dict, name: str) -> int:
    return after[name] - before[name]


def conflict_and_wait(spark, wait_s: float = 0.8) -> dict:
    """Another session holds t EXCLUSIVE; one SELECT is refused (LOCK_CONFLICT), another waits
    until the holder unlocks (about ``wait_s``). Returns the waiter's rows and the metrics seen
    while it waited."""
    holder = session(spark)
    holder.sql("LOCK TABLE t EXCLUSIVE")
    impatient = session(
        spark,
        **{"spark.sparklock.lock.numRetries": "1", "spark.sparklock.lock.retryInterval": "100ms"},
    )
    with pytest.raises(Exception, match="LOCK_CONFLICT"):
        impatient.sql("SELECT * FROM t").collect()
    waiter = session(spark)
    t, box = in_thread(lambda: waiter.sql("SELECT k FROM t WHERE k > 0").collect())
    assert wait_for(lambda: sparklock_metrics(spark)["waiting"] == 1, 20)
    while_waiting = sparklock_metrics(spark)
    time.sleep(wait_s)
    holder.sql("UNLOCK TABLE t")
    t.join(30)
    assert "error" not in box, box
    return {"rows": box["result"], "while_waiting": while_waiting}


def test_metrics_json_counts_a_conflict_and_a_wait(spark):
    before = sparklock_metrics(spark)
    seen = conflict_and_wait(spark)
    assert sorted(r.k for r in seen["rows"]) == [1, 2]
    during = seen["while_waiting"]
    assert during["waiting"] == 1 and during["locksHeld"] == 0  # LOCK TABLE: not a statement's
    after = sparklock_metrics(spark)
    # LOCK TABLE and the waiter were granted; the impatient SELECT was refused
    assert delta(after, before, "acquisitions") == 2
    assert delta(after, before, "conflicts") == 1
    assert delta(after, before, "cancelledWaits") == 0
    assert delta(after, before, "failedAcquisitions") == 0
    assert delta(after, before, "releases") == 1  # the waiter's (UNLOCK is no statement's)
    assert after["lockWaitTime"]["count"] - before["lockWaitTime"]["count"] == 2
    assert after["lockWaitTime"]["max"] >= 700  # milliseconds: the waiter's wait
    assert after["lockHoldTime"]["count"] - before["lockHoldTime"]["count"] == 1
    assert after["waiting"] == 0 and after["locksHeld"] == 0
    # the embedded manager opens no ZooKeeper; the gauge shows a client an earlier module left open
    zk = telemetry.last_backend_state("zookeeper")
    assert after["zookeeperConnected"] == (1 if zk is not None and zk.detail == "CONNECTED" else 0)
    assert after["locksLost"] == 0 and after["releasesRetried"] == 0


def test_cancelled_wait_is_counted_and_logged(spark):
    holder = session(spark)
    holder.sql("LOCK TABLE t EXCLUSIVE")
    before = sparklock_metrics(spark)
    sc = spark.sparkContext
    group = f"g-{uuid.uuid4().hex[:6]}"
    waiter = session(spark)

    def query():
        sc.setJobGroup(group, "waits")
        try:
            return waiter.sql("SELECT count(*) FROM t").collect()
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)

    t, box = in_thread(query)
    assert wait_for(lambda: get_service().waiting() == 1, 20)
    sc.cancelJobGroup(group)
    t.join(20)
    holder.sql("UNLOCK TABLE t")
    assert "LOCK_WAIT_CANCELLED" in str(box.get("error")), box
    after = sparklock_metrics(spark)
    assert delta(after, before, "cancelledWaits") == 1
    assert delta(after, before, "conflicts") == 0
    assert after["waiting"] == 0
    assert wait_for(lambda: _refusals(spark, "LOCK_WAIT_CANCELLED"), 20)


def _cycle(spark, limit: float, **conf: str) -> sparklock.DeadlockError:
    """Two sessions, each holding one table and asking for the other's: the one that closed the
    cycle (the youngest waiter) fails with LOCK_DEADLOCK within ``limit`` seconds, long before
    the 100 s budget; the other is granted once the victim's session unlocks."""
    s1, s2 = session(spark, **conf), session(spark, **conf)
    s1.sql("LOCK TABLE t EXCLUSIVE")
    s2.sql("LOCK TABLE u EXCLUSIVE")
    t1, box = in_thread(lambda: s1.sql("LOCK TABLE u EXCLUSIVE"))
    assert wait_for(lambda: get_service().waiting() == 1, 20)
    start = time.monotonic()
    with pytest.raises(sparklock.DeadlockError) as caught:
        s2.sql("LOCK TABLE t EXCLUSIVE")
    assert time.monotonic() - start < limit  # found when it closed, not at the budget's end
    e = caught.value
    assert e.getCondition() == "LOCK_DEADLOCK" and e.getSqlState() == "40P01"
    assert e.object_name == "default@t" and "held EXCLUSIVE by" in e.cycle
    assert t1.is_alive()
    s2.sql("UNLOCK TABLE u")
    t1.join(30)
    assert "error" not in box, box
    s1.sql("UNLOCK TABLE t")
    s1.sql("UNLOCK TABLE u")
    return e


def test_a_deadlock_fails_its_victim_at_once_counted_and_logged(spark):
    before = sparklock_metrics(spark)
    _cycle(spark, 30)
    after = sparklock_metrics(spark)
    assert delta(after, before, "deadlocks") == 1
    assert delta(after, before, "conflicts") == 0
    (event,) = wait_for(lambda: _refusals(spark, "LOCK_DEADLOCK"), 20) and _refusals(
        spark, "LOCK_DEADLOCK"
    )
    assert "deadlock between 2 waiting statements" in event["error"]


def test_a_deadlock_through_zookeeper_fails_its_victim_at_once(spark, zk_server, zk_namespace):
    """The same cycle with the locks in ZooKeeper: found from the waits the statements publish
    there (what another driver reads), ~0.05 s on an idle machine."""
    before = sparklock_metrics(spark)
    _cycle(spark, 5, **zookeeper_conf(zk_server.address, zk_namespace))
    assert delta(sparklock_metrics(spark), before, "deadlocks") == 1


@pytest.mark.metastore
def test_a_deadlock_through_the_metastore_fails_its_victim_at_once(spark, hive_metastore):
    """The same cycle with the locks in a real Hive metastore: found from its SHOW LOCKS (what
    another driver reads too), and the victim's request withdrawn (no WAITING row left)."""
    from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings

    conf = {
        "spark.sparklock.manager": "metastore",
        "spark.sparklock.metastore.uris": hive_metastore.uri,
    }
    before = sparklock_metrics(spark)
    e = _cycle(spark, 5, **conf)
    assert "default@t" in e.cycle and "default@u" in e.cycle
    assert delta(sparklock_metrics(spark), before, "deadlocks") == 1
    m = MetastoreLockManager(MetastoreSettings(uris=hive_metastore.uri))
    try:
        assert [i for i in m.list_locks() if i.obj.database == "default"] == []
    finally:
        m.close()


def _refusals(spark, code: str) -> list[dict]:
    return [
        e
        for e in event_log_lines(EVENT_LOG, spark)
        if e["Event"] == REFUSED and e["errorCode"] == code
    ]


def test_prometheus_servlet_shows_the_sparklock_names(spark):
    text = get(spark, "/metrics/prometheus/")
    lines = [line for line in text.splitlines() if "_driver_sparklock_" in line]
    names = {line.split("_driver_sparklock_", 1)[1].split("{")[0] for line in lines}
    for name in (
        "acquisitions_Count",
        "conflicts_Count",
        "cancelledWaits_Count",
        "releasesRetried_Count",
        "locksLost_Count",
        "locksHeld_Value",
        "waiting_Value",
        "zookeeperConnected_Value",
        "lockWaitTime_Count",
        "lockWaitTime_Max",
        "lockHoldTime_50thPercentile",
    ):
        assert name in names, sorted(names)


def test_event_log_holds_grants_releases_and_refusals(spark):
    conflict_and_wait(spark, wait_s=0.5)

    def ours() -> list[dict]:
        return [
            e for e in event_log_lines(EVENT_LOG, spark) if e["Event"].startswith("io.sparklock.")
        ]

    # the event log listener flushes other events at once; the listener bus is asynchronous
    assert wait_for(lambda: any(e["Event"] == RELEASED for e in ours()[-3:]), 20), ours()[-3:]
    events = ours()
    refusal = [e for e in events if e["Event"] == REFUSED][-1]
    assert refusal["errorCode"] == "LOCK_CONFLICT"
    assert "LOCK TABLE t EXCLUSIVE" in refusal["error"]  # names the holder
    assert refusal["statement"] == "SELECT * FROM t" and refusal["executionId"] is not None
    grant = [e for e in events if e["Event"] == GRANTED][-1]
    assert grant["statement"] == "SELECT k FROM t WHERE k > 0"
    assert grant["lockCount"] == 2  # SHARED on default and default@t
    assert grant["waitedNs"] >= 400_000_000
    release = [e for e in events if e["Event"] == RELEASED][-1]
    assert release["handle"] == grant["handle"] and release["error"] is None
    assert release["lockCount"] == 2 and release["heldNs"] > 0
    explicit = [e for e in events if e["Event"] == GRANTED and e["executionId"] is None][-1]
    assert explicit["statement"] == "LOCK TABLE t EXCLUSIVE" and explicit["lockCount"] == 1
    # the History Server replays them: Spark's JsonProtocol reads each line back
    protocol = spark.sparkContext._jvm.org.apache.spark.util.JsonProtocol
    for event in (refusal, grant, release):
        line = next(
            raw
            for raw in _raw_lines(spark)
            if f'"time":{event["time"]}' in raw and event["Event"] in raw
        )
        replayed = protocol.sparkEventFromJson(line)
        assert replayed.getClass().getName() == event["Event"]
        assert replayed.time() == event["time"]


def _raw_lines(spark) -> list[str]:
    import json

    return [json.dumps(e, separators=(",", ":")) for e in event_log_lines(EVENT_LOG, spark)]


def test_sql_tab_shows_the_lock_wait_of_the_statement(spark):
    earlier = max((e["id"] for e in sql_executions(spark)), default=-1)
    conflict_and_wait(spark, wait_s=2.5)  # well past the 1 s looked for, on a loaded machine

    def lock_nodes() -> list[tuple[str, list[dict]]]:
        return [  # this test's executions only: an earlier test's waiter waited too
            (execution["description"], node["metrics"])
            for execution in sql_executions(spark)
            if execution["id"] > earlier
            for node in execution["nodes"]
            if node["nodeName"] == "SparkLock"
        ]

    def waited() -> list[str]:
        return [
            metric["value"]
            for _, metrics in lock_nodes()
            for metric in metrics
            if metric["name"] == "lock wait time"
        ]

    assert wait_for(lambda: any(_seconds(v) >= 1.0 for v in waited()), 20), lock_nodes()


def _seconds(value: str) -> float:
    """A timing metric's text as the UI shows it (``1.3 s``, ``250 ms``, ``2.0 m``)."""
    number, unit = value.split()[-2:]
    scale = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    return float(number) * scale.get(unit, 0.0)


# -- ZooKeeper: the connection gauge, locks lost, releases retried ------------------------------
def _figure(spark, name: str):
    telemetry_sink.sink().flush()  # Python's reports reach the JVM in batches
    return sparklock_metrics(spark)[name]


def _expire(address: str, session_id: int, password: bytes) -> None:
    """Expire a live ZooKeeper session for real: another client resumes it and closes it."""
    thief = KazooClient(hosts=address, client_id=(session_id, password))
    thief.start(10)
    thief.stop()
    thief.close()


@pytest.mark.zookeeper
def test_zookeeper_connection_and_locks_lost(spark, zk_server, zk_namespace):
    """The gauge follows the connection; a session expired under a running statement counts its
    locks as lost, and the statement's release event carries LOCKS_LOST."""
    zk_session = session(
        spark,
        **zookeeper_conf(zk_server.address, zk_namespace),
        **{"spark.sparklock.zookeeper.sessionTimeout": "6s"},  # a shared client of its own
    )
    register_udfs(zk_session)  # temporary functions: per session
    zk_session.sql("SELECT count(*) FROM t").collect()  # connects
    assert wait_for(lambda: _figure(spark, "zookeeperConnected") == 1, 20)
    before = sparklock_metrics(spark)
    client = session_manager(zk_session).shared_client.client
    session_id, password = client.client_id
    t, box = in_thread(lambda: zk_session.sql("SELECT slow(k, 4) FROM t").collect())
    assert wait_for(lambda: sparklock_metrics(spark)["locksHeld"] == 2, 20)
    time.sleep(0.5)
    _expire(zk_server.address, session_id, password)
    t.join(30)
    assert "LOCKS_LOST" in str(box.get("error")), box
    assert wait_for(lambda: _figure(spark, "locksLost") - before["locksLost"] == 2, 20)
    after = sparklock_metrics(spark)
    assert after["locksHeld"] == 0
    assert delta(after, before, "releases") == 0  # the hold ended, but nothing was released
    assert after["lockHoldTime"]["count"] - before["lockHoldTime"]["count"] == 1
    lost = [
        e
        for e in event_log_lines(EVENT_LOG, spark)
        if e["Event"] == RELEASED and str(e["error"]).startswith("LOCKS_LOST")
    ]
    assert wait_for(lambda: lost or None, 1) and lost[-1]["lockCount"] == 2
    zk_session.sql("SELECT count(*) FROM t").collect()  # a new session
    assert wait_for(lambda: _figure(spark, "zookeeperConnected") == 1, 20)


@pytest.mark.zookeeper
def test_release_retries_are_counted(spark, zk_namespace):
    """The server dies while a statement holds its locks: the release is tried again (the
    manager's unlock.numRetries, then the background retrier) until the server is back."""
    with ZooKeeperServer() as server:
        zk_session = session(
            spark,
            **zookeeper_conf(server.address, zk_namespace),
            **{
                "spark.sparklock.zookeeper.sessionTimeout": "30s",
                "spark.sparklock.zookeeper.connectionTimeout": "500ms",
                "spark.sparklock.unlock.numRetries": "2",
            },
        )
        register_udfs(zk_session)
        zk_session.sql("SELECT count(*) FROM t").collect()  # connects
        before = sparklock_metrics(spark)
        t, box = in_thread(lambda: zk_session.sql("SELECT slow(k, 2) FROM t").collect())
        assert wait_for(lambda: sparklock_metrics(spark)["locksHeld"] == 2, 20)
        server.stop(kill=True)
        assert wait_for(lambda: _figure(spark, "zookeeperConnected") == 0, 20)
        t.join(60)
        assert "UNLOCK_FAILED" in str(box.get("error")), box
        server.start()  # same port and data: the session and its locks are still there
        svc = get_service()
        assert wait_for(lambda: svc.unreleased() == [], 30), svc.unreleased()
        after = sparklock_metrics(spark)
        assert wait_for(lambda: _figure(spark, "releasesRetried") - before["releasesRetried"] >= 2)
        assert _figure(spark, "zookeeperConnected") == 1
        assert after["locksHeld"] == 0
        released = [e for e in event_log_lines(EVENT_LOG, spark) if e["Event"] == RELEASED]
        assert str(released[-1]["error"]).startswith("UNLOCK_FAILED"), released[-1]
        session_manager(zk_session).close()  # leave no client reconnecting to a stopped server
