"""Nothing leaked, nothing unprotected: real faults, then SHOW LOCKS and the ZooKeeper tree.

Every test produces its fault for real -- a UDF raising inside a job, an analysis error, a lock
conflict, ``cancelAllJobs``/``cancelJobGroup`` from another thread (while the query runs and while
it still waits for its locks), SIGINT during ``collect()`` and SIGKILL of a separate driver
process, a ZooKeeper server restarted, one member of a 3-server ensemble killed, the session
expired under a running query, the server stopped during release -- and then checks that the
lock tree holds exactly what it should: no implicit lock left, explicit ones untouched.

One local Spark session for the module on the ZooKeeper manager; each test switches it to its own
namespace (and, for the server faults, its own server) with ``spark.conf.set`` -- the lock
settings are read per statement. Separate drivers are ``tests/support/driver.py`` processes.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

pyspark = pytest.importorskip("pyspark")

from kazoo.client import KazooClient  # noqa: E402
from kazoo.exceptions import NoNodeError  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

import sparklock  # noqa: E402
from sparklock.managers import get_manager  # noqa: E402
from sparklock.service import config_of, get_service  # noqa: E402
from tests.support.driver import Driver  # noqa: E402
from tests.support.zookeeper import ZooKeeperEnsemble, ZooKeeperServer  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper]

#: The error codes a statement may end with when ZooKeeper itself fails under it.
CLEAR_ERRORS = ("LOCK_MANAGER_UNAVAILABLE", "LOCKS_LOST", "UNLOCK_FAILED", "LOCK_CONFLICT")

LOCK_KEYS = (
    "spark.sparklock.manager",
    "spark.sparklock.zookeeper.quorum",
    "spark.sparklock.zookeeper.namespace",
    "spark.sparklock.zookeeper.sessionTimeout",
    "spark.sparklock.zookeeper.connectionTimeout",
    "spark.sparklock.lock.numRetries",
    "spark.sparklock.lock.retryInterval",
    "spark.sparklock.unlock.numRetries",
)


def register_udfs(session) -> None:
    """slow(x, seconds) sleeps in the task; boom(x) raises (temporary: per session).

    Closures, so they are pickled by value (Python workers cannot import this test module)."""
    import time as _time

    def slow(x, seconds):
        _time.sleep(float(seconds))
        return x

    def boom(x):
        raise ValueError(f"boom on {x}")

    session.udf.register("slow", slow, "int")
    session.udf.register("boom", boom, "int")


@pytest.fixture(scope="module")
def spark(tmp_path_factory, zk_server):
    warehouse = tmp_path_factory.mktemp("warehouse")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("sparklock-reliability")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    session = sparklock.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("OFF")
    # Session conf, not builder conf: the first SparkContext's conf becomes the JVM's system
    # properties, and every later context in this process (other test modules) would inherit it.
    session.conf.set("spark.sparklock.manager", "zookeeper")
    session.conf.set("spark.sparklock.zookeeper.quorum", zk_server.address)
    session.conf.set("spark.sparklock.zookeeper.namespace", "sparklock_reliability_setup")

    register_udfs(session)
    session.sql("CREATE TABLE t (k INT) USING parquet")
    session.sql("CREATE TABLE pt (v INT, p STRING) USING parquet PARTITIONED BY (p)")
    session.sql("INSERT INTO t VALUES (1), (2), (3), (4)")
    session.sql("INSERT INTO pt VALUES (1, 'a'), (2, 'b')")
    yield session
    for key in LOCK_KEYS:
        session.conf.unset(key)
    session.stop()


@pytest.fixture
def ns(spark, zk_server, zk_namespace):
    """This test's namespace (and the module's server) for every statement of the session."""
    spark.conf.set("spark.sparklock.zookeeper.quorum", zk_server.address)
    spark.conf.set("spark.sparklock.zookeeper.namespace", zk_namespace)
    yield zk_namespace
    for key in LOCK_KEYS:
        spark.conf.unset(key)
    spark.conf.set("spark.sparklock.manager", "zookeeper")
    spark.conf.set("spark.sparklock.zookeeper.quorum", zk_server.address)
    spark.conf.set("spark.sparklock.zookeeper.namespace", "sparklock_reliability_setup")
    assert get_service().open_handles() == 0


def lock_nodes(zk: KazooClient, namespace: str) -> dict[str, bytes]:
    """Every ``LOCK-*`` znode below the namespace: path -> data."""
    out: dict[str, bytes] = {}
    root = "/" + namespace
    if zk.exists(root) is None:
        return out
    todo = [root]
    while todo:
        path = todo.pop()
        try:
            children = zk.get_children(path)
        except NoNodeError:
            continue  # released and cleaned up while we walked
        for child in children:
            full = f"{path}/{child}"
            if child.startswith("LOCK-"):
                try:
                    out[full] = zk.get(full)[0]
                except NoNodeError:
                    pass
            else:
                todo.append(full)
    return out


def lock_types(zk: KazooClient, namespace: str) -> list[tuple[str, str]]:
    """(object path below the namespace, IMPLICIT|EXPLICIT) of every lock node, sorted."""
    out = []
    for path, data in lock_nodes(zk, namespace).items():
        obj = path[len(namespace) + 2 :].rsplit("/", 1)[0]
        out.append((obj, data.decode().split(":")[2]))
    return sorted(out)


def show_locks(spark) -> list[tuple[str, str]]:
    return [(r["name"], r["mode"]) for r in spark.sql("SHOW LOCKS").collect()]


def wait_for(predicate, timeout: float = 15.0, interval: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def in_thread(fn, *args):
    """Run ``fn`` on a thread; returns (thread, box) where box gets 'result'/'error'/'elapsed'."""
    box: dict = {}

    def run():
        start = time.monotonic()
        try:
            box["result"] = fn(*args)
        except BaseException as e:  # noqa: BLE001
            box["error"] = e
        box["end"] = time.monotonic()
        box["elapsed"] = box["end"] - start

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def other_session_locks(spark, statement: str):
    """Take an explicit lock as *another* session (a session's own LOCK never blocks it)."""
    other = spark.newSession()
    for key in LOCK_KEYS:
        v = spark.conf.get(key, None)
        if v is not None:
            other.conf.set(key, v)
    other.sql(statement)
    return other


# -- failures -----------------------------------------------------------------------------------
def test_failing_statements_leave_no_implicit_lock(spark, ns, zk):
    other = other_session_locks(spark, "LOCK TABLE t SHARED")
    explicit = lock_types(zk, ns)
    assert explicit == [("default/t", "EXPLICIT")]
    # execution failure: a UDF raising inside the job (read, then a write)
    with pytest.raises(Exception, match="boom on"):
        spark.sql("SELECT boom(k) FROM t").collect()
    with pytest.raises(Exception, match="boom on"):
        spark.sql("INSERT INTO pt PARTITION (p='c') SELECT boom(k) FROM t")
    # analysis failure: nothing runs, nothing is locked
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND|cannot be found"):
        spark.sql("SELECT * FROM no_such_table").collect()
    with pytest.raises(Exception, match="UNRESOLVED_COLUMN|cannot be resolved"):
        spark.sql("SELECT no_such_column FROM t").collect()
    # waiting failure: the budget runs out behind another session's lock
    spark.conf.set("spark.sparklock.lock.numRetries", "2")
    spark.conf.set("spark.sparklock.lock.retryInterval", "100ms")
    with pytest.raises(
        Exception, match="LOCK_CONFLICT: could not acquire EXCLUSIVE lock on default@t"
    ):
        spark.sql("INSERT INTO t VALUES (9)")
    assert lock_types(zk, ns) == explicit
    assert show_locks(spark) == [("default@t", "SHARED")]  # LOCK TABLE: exactly the table
    assert get_service().open_handles() == 0
    other.sql("UNLOCK TABLE t")
    assert lock_nodes(zk, ns) == {}
    assert spark.sql("SELECT count(*) FROM t").collect()[0][0] == 4  # nothing half-written


# -- cancellation -------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["cancelAllJobs", "cancelJobGroup"])
def test_cancel_running_query(spark, ns, zk, how):
    sc = spark.sparkContext
    group = f"g-{uuid.uuid4().hex[:6]}"

    def query():
        sc.setJobGroup(group, "reliability", interruptOnCancel=True)
        try:
            return spark.sql("SELECT sum(slow(k, 3)) FROM t").collect()
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)

    t, box = in_thread(query)
    assert wait_for(lambda: lock_types(zk, ns) != [], 20)  # it holds its locks
    tracker = sc.statusTracker()
    assert wait_for(lambda: tracker.getJobIdsForGroup(group) != [], 20)  # and runs its job
    time.sleep(0.3)
    cancelled = time.monotonic()
    sc.cancelAllJobs() if how == "cancelAllJobs" else sc.cancelJobGroup(group)
    t.join(30)
    assert "cancel" in str(box.get("error")).lower(), box
    assert box["end"] - cancelled < 2.5  # stopped, not run to its end (2 rounds of 3 s sleeps)
    assert wait_for(lambda: lock_nodes(zk, ns) == {}, 5)
    assert get_service().open_handles() == 0


@pytest.mark.parametrize(
    "how", ["cancelAllJobs", "cancelJobGroup", "cancelJobsWithTag", "interruptAll"]
)
def test_cancel_while_waiting_for_locks(spark, ns, zk, how):
    """The wait itself ends at the cancel (no job exists yet), not at its 60 s budget."""
    other = other_session_locks(spark, "LOCK TABLE t EXCLUSIVE")
    spark.conf.set("spark.sparklock.lock.numRetries", "60")
    spark.conf.set("spark.sparklock.lock.retryInterval", "1s")
    sc = spark.sparkContext
    group, tag = f"g-{uuid.uuid4().hex[:6]}", f"tag-{uuid.uuid4().hex[:6]}"

    def query():
        sc.setJobGroup(group, "waits")
        sc.addJobTag(tag)
        try:
            return spark.sql("SELECT count(*) FROM t").collect()
        finally:
            sc.removeJobTag(tag)
            sc.setLocalProperty("spark.jobGroup.id", None)

    svc = get_service()
    t, box = in_thread(query)
    assert wait_for(lambda: svc.waiting() == 1, 20)
    assert wait_for(lambda: len(lock_nodes(zk, ns)) >= 2, 5)  # its place in line is visible
    if how == "cancelAllJobs":
        sc.cancelAllJobs()
    elif how == "cancelJobGroup":
        sc.cancelJobGroup("some-other-group")  # does not match: keeps waiting
        time.sleep(0.3)
        assert svc.waiting() == 1
        sc.cancelJobGroup(group)
    elif how == "cancelJobsWithTag":
        sc.cancelJobsWithTag(tag)
    else:
        spark.interruptAll()
    t.join(10)
    assert not t.is_alive()
    assert "LOCK_WAIT_CANCELLED: cancelled by" in str(box.get("error")), box
    assert box["elapsed"] < 15
    assert lock_types(zk, ns) == [("default/t", "EXPLICIT")]  # the explicit lock untouched
    assert svc.waiting() == 0 and svc.open_handles() == 0
    other.sql("UNLOCK TABLE t")
    assert lock_nodes(zk, ns) == {}


# -- ZooKeeper faults ---------------------------------------------------------------------------
def test_session_expiry_fences_the_running_query(spark, ns, zk, zk_server):
    """Expire the session for real under a running INSERT: its jobs are cancelled at once and
    it fails with LOCKS_LOST; the next statement runs on a new session."""
    spark.conf.set("spark.sparklock.zookeeper.sessionTimeout", "7s")  # its own shared client
    spark.sql("SELECT count(*) FROM t").collect()  # connect
    client = _shared_client(spark)
    session_id, password = client.client_id

    t, box = in_thread(
        lambda: spark.sql("INSERT INTO pt PARTITION (p='x') SELECT slow(k, 5) FROM t")
    )
    assert wait_for(lambda: ("default/pt/p=x", "IMPLICIT") in lock_types(zk, ns), 20)
    time.sleep(0.5)
    thief = KazooClient(hosts=zk_server.address, client_id=(session_id, password))
    thief.start(10)
    thief.stop()
    thief.close()
    t.join(30)
    assert "LOCKS_LOST" in str(box.get("error")), box
    assert box["elapsed"] < 9  # cancelled, not run to the end (2 × 5 s of sleeps)
    assert lock_nodes(zk, ns) == {}
    # the next statement reconnects cleanly (a new session) and holds/release normally
    spark.sql("INSERT INTO pt PARTITION (p='y') SELECT k FROM t")
    assert client.client_id[0] != session_id
    assert lock_nodes(zk, ns) == {}
    assert get_service().open_handles() == 0


def _run_until(spark, stop: threading.Event, statements: list[str], outcomes: list):
    session = spark.newSession()
    register_udfs(session)
    for key in LOCK_KEYS:
        v = spark.conf.get(key, None)
        if v is not None:
            session.conf.set(key, v)
    i = 0
    while not stop.is_set():
        sql = statements[i % len(statements)]
        i += 1
        try:
            session.sql(sql).collect()
            outcomes.append(("ok", sql))
        except Exception as e:  # noqa: BLE001
            outcomes.append(("error", str(e)[:1500]))


RIDE_STATEMENTS = [
    "SELECT sum(slow(k, 0.2)) FROM t",
    "INSERT INTO pt PARTITION (p='r') SELECT slow(k, 0.1) FROM t",
    "SELECT count(*) FROM pt WHERE p = 'a'",
]


def _ride_through(spark, ns, address: str, fault, settle: float = 3.0):
    spark.conf.set("spark.sparklock.zookeeper.quorum", address)
    spark.conf.set("spark.sparklock.zookeeper.sessionTimeout", "20s")
    spark.conf.set("spark.sparklock.zookeeper.connectionTimeout", "3s")
    spark.conf.set("spark.sparklock.unlock.numRetries", "3")
    spark.conf.set("spark.sparklock.lock.numRetries", "30")
    spark.conf.set("spark.sparklock.lock.retryInterval", "500ms")
    stop, outcomes = threading.Event(), []
    workers = [
        threading.Thread(target=_run_until, args=(spark, stop, RIDE_STATEMENTS, outcomes))
        for _ in range(2)
    ]
    for w in workers:
        w.start()
    try:
        assert wait_for(lambda: len(outcomes) >= 4, 90), outcomes
        before = len(outcomes)
        fault()
        time.sleep(settle)
    finally:
        stop.set()
        for w in workers:
            w.join(120)
    after = outcomes[before:]
    errors = [o for o in outcomes if o[0] == "error"]
    unclear = [
        e
        for e in errors
        if not e[1].lstrip().startswith(CLEAR_ERRORS) and not any(c in e[1] for c in CLEAR_ERRORS)
    ]
    assert unclear == [], unclear
    print(
        f"\nride-through: {len(outcomes)} statements, {len(after)} after the fault, "
        f"errors: {sorted({e[1].split(':')[0] for e in errors})}"
    )
    # the statement after the fault runs, and nothing is left over in the tree
    spark.sql("INSERT INTO pt PARTITION (p='r') SELECT k FROM t")
    svc = get_service()
    assert wait_for(lambda: svc.unreleased() == [], 30), svc.unreleased()
    return outcomes, after, errors


def test_zookeeper_restart_while_queries_hold_locks(spark, ns):
    with ZooKeeperServer() as server:

        def restart():
            server.stop(kill=True)
            time.sleep(1.0)
            server.start()

        outcomes, after, errors = _ride_through(spark, ns, server.address, restart)
        assert any(o[0] == "ok" for o in after)  # queries continue after the restart
        zk = KazooClient(hosts=server.address)
        zk.start(10)
        try:
            assert wait_for(lambda: lock_nodes(zk, ns) == {}, 25)
        finally:
            zk.stop()
            zk.close()


def test_ensemble_member_killed_while_queries_hold_locks(spark, ns):
    with ZooKeeperEnsemble(3) as ensemble:

        def kill_connected():
            client = _shared_client(spark)
            port = client._connection._socket.getpeername()[1]
            victim = next(s for s in ensemble.servers if s.port == port)
            victim.stop(kill=True)

        outcomes, after, errors = _ride_through(spark, ns, ensemble.address, kill_connected)
        assert any(o[0] == "ok" for o in after)
        zk = KazooClient(hosts=ensemble.address)
        zk.start(10)
        try:
            assert wait_for(lambda: lock_nodes(zk, ns) == {}, 25)
        finally:
            zk.stop()
            zk.close()


def _shared_client(spark):
    conf = {k: spark.conf.get(k) for k in LOCK_KEYS if spark.conf.get(k, None)}
    conf["spark.sparklock.manager"] = "zookeeper"
    return get_manager(config_of(conf)).shared_client.client


def test_unlock_failure_is_reported_then_cleaned_up(spark, ns):
    """The server dies while a query holds its locks: release fails after its retries and the
    statement says so (UNLOCK_FAILED, naming the locks); once the server is back the kept handle
    is released in the background and the tree is empty."""
    with ZooKeeperServer() as server:
        spark.conf.set("spark.sparklock.zookeeper.quorum", server.address)
        spark.conf.set("spark.sparklock.zookeeper.sessionTimeout", "30s")
        spark.conf.set("spark.sparklock.zookeeper.connectionTimeout", "500ms")
        spark.conf.set("spark.sparklock.unlock.numRetries", "2")
        zk = KazooClient(hosts=server.address)
        zk.start(10)
        t, box = in_thread(
            lambda: spark.sql("INSERT INTO pt PARTITION (p='u') SELECT slow(k, 2) FROM t")
        )
        assert wait_for(lambda: ("default/pt/p=u", "IMPLICIT") in lock_types(zk, ns), 20)
        zk.stop()
        zk.close()
        server.stop(kill=True)
        t.join(60)
        error = str(box.get("error"))
        assert "UNLOCK_FAILED" in error and "p=u/LOCK-EXCLUSIVE-" in error, box
        svc = get_service()
        assert len(svc.unreleased()) == 1  # kept, not swallowed
        server.start()  # same port and data: the session (and its ephemeral nodes) survive
        assert wait_for(lambda: svc.unreleased() == [], 30), svc.unreleased()
        zk = KazooClient(hosts=server.address)
        zk.start(10)
        try:
            assert lock_nodes(zk, ns) == {}
        finally:
            zk.stop()
            zk.close()


# -- separate drivers: SIGINT and SIGKILL -------------------------------------------------------
@pytest.fixture(scope="module")
def driver(tmp_path_factory, zk_server):
    d = Driver(
        zk_server.address,
        "sparklock_reliability_driver",
        str(tmp_path_factory.mktemp("driver-warehouse")),
        conf={"spark.sparklock.zookeeper.sessionTimeout": "2s"},
    )
    assert d.sql("CREATE TABLE t (k INT) USING parquet")["ok"]
    assert d.sql("INSERT INTO t VALUES (1), (2), (3), (4)")["ok"]
    yield d
    d.close()


def _driver_ns(driver, namespace: str) -> None:
    assert driver.sql(f"SET spark.sparklock.zookeeper.namespace={namespace}")["ok"]


def test_sigint_during_collect_releases_everything(driver, ns, zk):
    _driver_ns(driver, ns)
    out = driver.send({"op": "sigint", "sql": "SELECT sum(slow(k, 10)) FROM t", "after": 0.5})
    assert out["interrupted"], out
    # cancelled, not run to its end (2 rows x 10 s per task); slack for a loaded machine
    assert wait_for(lambda: lock_nodes(zk, ns) == {}, 8)
    status = driver.send({"op": "status"})
    assert status == {"open": 0, "waiting": 0, "unreleased": []} or wait_for(
        lambda: driver.send({"op": "status"})["open"] == 0, 10
    )
    assert driver.sql("SELECT count(*) FROM t")["rows"] == [[4]]  # the driver goes on


def test_sigint_while_waiting_for_locks(spark, driver, ns, zk):
    """Ctrl-C while the statement is queued behind another driver's lock: PySpark's SIGINT
    handler calls cancelAllJobs, which (hooked) ends the wait; nothing is left in line.

    The JVM runs the acquire callback on the very Python thread that called ``collect()``
    (PySpark's pinned threads), so the handler's KeyboardInterrupt is raised inside the wait: the
    statement then fails with LOCK_WAIT_CANCELLED instead of surfacing a KeyboardInterrupt."""
    _driver_ns(driver, ns)
    assert driver.sql("SET spark.sparklock.lock.numRetries=60")["ok"]
    spark.sql("LOCK TABLE t EXCLUSIVE")  # this process's session: another driver for it
    try:
        out = driver.send(
            {"op": "sigint", "sql": "SELECT count(*) FROM t", "after": 0.5, "when": "waiting"}
        )
        assert out["interrupted"] or "LOCK_WAIT_CANCELLED" in out["error"], out
        assert out["elapsed"] < 10, out  # not its 60 s budget
        assert wait_for(lambda: driver.send({"op": "status"})["waiting"] == 0, 10)
        assert lock_types(zk, ns) == [("default/t", "EXPLICIT")]
    finally:
        spark.sql("UNLOCK TABLE t")
        driver.sql("SET spark.sparklock.lock.numRetries=100")
    assert lock_nodes(zk, ns) == {}


def test_killed_driver_locks_vanish_and_others_proceed(spark, driver, ns, zk):
    """SIGKILL a driver holding EXCLUSIVE on default@t (session timeout 2 s): its ephemeral
    locks go with its session and this driver's queued insert then proceeds."""
    _driver_ns(driver, ns)
    driver.send({"op": "bg", "sql": "INSERT INTO t SELECT slow(k, 30) FROM t"})
    assert wait_for(lambda: ("default/t", "IMPLICIT") in lock_types(zk, ns), 30)
    spark.conf.set("spark.sparklock.lock.numRetries", "30")
    t, box = in_thread(lambda: spark.sql("INSERT INTO t VALUES (5)"))
    time.sleep(0.5)
    assert t.is_alive()  # queued behind the other driver
    killed = time.monotonic()
    driver.kill()
    t.join(30)
    assert "error" not in box, box
    assert time.monotonic() - killed < 2.0 + 4.0  # session timeout plus slack
    assert lock_nodes(zk, ns) == {}
    assert spark.sql("SELECT count(*) FROM t").collect()[0][0] == 5
