"""Nothing leaked, nothing unprotected: real faults, then SHOW LOCKS and the ZooKeeper tree.

Every test produces its fault for real -- a UDF raising inside a job, an analysis error, a lock
conflict, ``cancelAllJobs``/``cancelJobGroup`` from another thread (while the query runs and while
it still waits for its locks), SIGINT during ``collect()`` and SIGKILL of a separate driver
process, a ZooKeeper server restarted, one member of a 3-server ensemble killed, the session
expired under a running query, the server stopped during release (for a moment, or for good)
-- and then checks that the lock tree holds exactly what it should: no implicit lock left,
explicit ones untouched.

One local Spark session for the module on the ZooKeeper manager; each test switches it to its own
namespace (and, for the server faults, its own server) with ``spark.conf.set`` -- the lock
settings are read per statement. Separate drivers are ``tests/support/driver.py`` processes.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

import pytest
from kazoo.client import KazooClient  # noqa: E402

from sparklock.errors import (  # noqa: E402
    LockManagerUnavailableError,
    LocksLostError,
    UnlockError,
)
from sparklock.managers import get_manager  # noqa: E402
from sparklock.protocol.messages import ExplicitLockRequest, UnlockRequest, read_request  # noqa: E402
from sparklock.rules.facts import Facts, parse_facts  # noqa: E402
from sparklock.service import LockService, config_of, get_service  # noqa: E402
from tests.support.driver import Driver  # noqa: E402
from tests.support.locks import session_manager, wait_for  # noqa: E402
from tests.support.spark import SparkSpec, register_udfs  # noqa: E402
from tests.support.spark_versions import SPARK_LINE, needs_spark  # noqa: E402
from tests.support.zk_tree import inspecting, znodes  # noqa: E402
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


SPARK = SparkSpec(
    app="reliability",
    log_level="OFF",
    zookeeper_namespace="sparklock_reliability_setup",
    setup=register_udfs,
    setup_sql=(
        "CREATE TABLE t (k INT) USING parquet",
        "CREATE TABLE pt (v INT, p STRING) USING parquet PARTITIONED BY (p)",
        "INSERT INTO t VALUES (1), (2), (3), (4)",
        "INSERT INTO pt VALUES (1, 'a'), (2, 'b')",
    ),
)


@pytest.fixture
def ns(spark, zk_server, zk_namespace):
    """This test's namespace (and the module's server) for every statement of the session."""
    spark.conf.set("spark.sparklock.zookeeper.quorum", zk_server.address)
    spark.conf.set("spark.sparklock.zookeeper.namespace", zk_namespace)
    yield zk_namespace
    manager = session_manager(spark)
    if manager.quorum != zk_server.address:
        manager.close()  # the test's own server is gone: leave no client reconnecting to it
    for key in LOCK_KEYS:
        spark.conf.unset(key)
    spark.conf.set("spark.sparklock.manager", "zookeeper")
    spark.conf.set("spark.sparklock.zookeeper.quorum", zk_server.address)
    spark.conf.set("spark.sparklock.zookeeper.namespace", "sparklock_reliability_setup")
    assert get_service().open_handles() == 0


def lock_nodes(zk: KazooClient, namespace: str) -> dict[str, bytes]:
    """Every ``LOCK-*`` znode below the namespace: path -> data."""
    return {p: data for p, (data, _) in znodes(zk, "/" + namespace, locks_only=True).items()}


def lock_types(zk: KazooClient, namespace: str) -> list[tuple[str, str]]:
    """(object path below the namespace, IMPLICIT|EXPLICIT) of every lock node, sorted."""
    out = []
    for path, data in lock_nodes(zk, namespace).items():
        obj = path[len(namespace) + 2 :].rsplit("/", 1)[0]
        out.append((obj, data.decode().split(":")[2]))
    return sorted(out)


def show_locks(spark) -> list[tuple[str, str]]:
    return [(r["name"], r["mode"]) for r in spark.sql("SHOW LOCKS").collect()]


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
    "how",
    [
        "cancelAllJobs",
        "cancelJobGroup",
        "cancelJobsWithTag",
        pytest.param(
            "interruptAll",
            marks=needs_spark((4, 0), "SparkSession.interruptAll() on a classic session"),
        ),
    ],
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
def expire_session(address: str, session_id: int, password: bytes) -> None:
    """Expire a live ZooKeeper session for real: another client resumes it and closes it."""
    thief = KazooClient(hosts=address, client_id=(session_id, password))
    thief.start(10)
    thief.stop()
    thief.close()


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
    expire_session(zk_server.address, session_id, password)
    t.join(30)
    assert isinstance(box.get("error"), LocksLostError), box
    assert box["elapsed"] < 9  # cancelled, not run to the end (2 × 5 s of sleeps)
    assert lock_nodes(zk, ns) == {}
    # the next statement reconnects cleanly (a new session) and holds/release normally
    spark.sql("INSERT INTO pt PARTITION (p='y') SELECT k FROM t")
    assert client.client_id[0] != session_id
    assert lock_nodes(zk, ns) == {}
    assert get_service().open_handles() == 0


def test_session_expiry_fences_an_rdd_path_action(spark, ns, zk, zk_server):
    """An action whose jobs run inside its execution but outside ``executeCollect`` (here an
    eager ``localCheckpoint``; Arrow ``toPandas`` takes the same path) holds its locks until the
    execution ends; when they are lost its jobs are cancelled as well, instead of running on
    unprotected (without the fence it completes in ~7 s and returns 4)."""
    spark.conf.set("spark.sparklock.zookeeper.sessionTimeout", "7s")
    spark.sql("SELECT count(*) FROM t").collect()  # connect
    session_id, password = _shared_client(spark).client_id
    frame = spark.sql("SELECT slow(k, 3) AS k FROM t")
    t, box = in_thread(lambda: frame.localCheckpoint(eager=True).count())
    assert wait_for(lambda: ("default/t", "IMPLICIT") in lock_types(zk, ns), 20)
    time.sleep(0.5)
    expire_session(zk_server.address, session_id, password)
    t.join(30)
    if SPARK_LINE >= (4, 0):
        assert "LOCKS_LOST" in str(box.get("error")), box
    else:  # 3.5's cancelJobsWithTag takes no reason: the jobs fail as cancelled by the fence tag
        assert "part of cancelled job tag sparklock-" in str(box.get("error")), box
    assert box["elapsed"] < 6
    assert wait_for(lambda: get_service().open_handles() == 0, 10)
    assert lock_nodes(zk, ns) == {}


def test_cancel_while_lock_table_waits(spark, ns, zk):
    """A LOCK TABLE queued behind another session's lock is a wait like a statement's: a
    cancellation of its job group ends it with LOCK_WAIT_CANCELLED, holding nothing."""
    other = other_session_locks(spark, "LOCK TABLE t EXCLUSIVE")
    spark.conf.set("spark.sparklock.lock.numRetries", "60")
    spark.conf.set("spark.sparklock.lock.retryInterval", "1s")
    sc = spark.sparkContext
    group = f"g-{uuid.uuid4().hex[:6]}"

    def lock():
        sc.setJobGroup(group, "waits")
        try:
            spark.sql("LOCK TABLE t SHARED")
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)

    svc = get_service()
    t, box = in_thread(lock)
    assert wait_for(lambda: svc.waiting() == 1, 20)
    sc.cancelJobGroup("some-other-group")  # does not match: keeps waiting
    time.sleep(0.3)
    assert svc.waiting() == 1
    sc.cancelJobGroup(group)
    t.join(10)
    assert not t.is_alive()
    assert "LOCK_WAIT_CANCELLED: cancelled by" in str(box.get("error")), box
    assert box["elapsed"] < 15
    assert lock_types(zk, ns) == [("default/t", "EXPLICIT")]  # only the other session's
    assert svc.waiting() == 0
    other.sql("UNLOCK TABLE t")
    assert lock_nodes(zk, ns) == {}


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
        with inspecting(server.address) as zk:
            assert wait_for(lambda: lock_nodes(zk, ns) == {}, 25)


def test_ensemble_member_killed_while_queries_hold_locks(spark, ns):
    with ZooKeeperEnsemble(3) as ensemble:

        def kill_connected():
            client = _shared_client(spark)
            port = client._connection._socket.getpeername()[1]
            victim = next(s for s in ensemble.servers if s.port == port)
            victim.stop(kill=True)

        outcomes, after, errors = _ride_through(spark, ns, ensemble.address, kill_connected)
        assert any(o[0] == "ok" for o in after)
        with inspecting(ensemble.address) as zk:
            assert wait_for(lambda: lock_nodes(zk, ns) == {}, 25)


def _shared_client(spark):
    return session_manager(spark).shared_client.client


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
        with inspecting(server.address) as zk:
            assert lock_nodes(zk, ns) == {}


# -- the background release retry gives up when it is pointless ---------------------------------
RETRIER = "sparklock-unlock-retry"


def retriers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == RETRIER]


def retry_conf(address: str, namespace: str, session_timeout: str) -> dict[str, str]:
    """Fail a release fast: 2 attempts, each waiting 500 ms for a connection."""
    return {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": address,
        "spark.sparklock.zookeeper.namespace": namespace,
        "spark.sparklock.zookeeper.sessionTimeout": session_timeout,
        "spark.sparklock.zookeeper.connectionTimeout": "500ms",
        "spark.sparklock.unlock.numRetries": "2",
    }


def insert_facts(conf: dict[str, str], partition: str) -> Facts:
    """What the JVM reports for ``INSERT INTO pt PARTITION (p=<partition>) ...``."""
    return parse_facts(
        {
            "session": "retry-session",
            "executionId": partition,
            "sql": f"INSERT INTO pt PARTITION (p='{partition}') SELECT 1",
            "conf": conf,
            "writes": [
                {
                    "kind": "table",
                    "database": "default",
                    "table": "pt",
                    "partitionColumns": ["p"],
                    "staticPartition": {"p": partition},
                }
            ],
        }
    )


def acquire_within(svc: LockService, facts: Facts, timeout: float) -> str:
    """Acquire, trying again while the client cannot connect yet (500 ms connection timeout on
    a freshly restarted server)."""
    end = time.monotonic() + timeout
    while True:
        try:
            return svc.acquire(facts)
        except LockManagerUnavailableError:
            if time.monotonic() > end:
                raise


def gave_up(records: list[logging.LogRecord]) -> list[str]:
    return [
        r.getMessage()
        for r in records
        if r.levelno == logging.WARNING and r.getMessage().startswith("sparklock: gave up")
    ]


def test_release_retry_gives_up_when_zookeeper_is_gone_for_good(zk_namespace, caplog):
    """Kill the server for good while a statement's release fails: the handle is kept at first;
    once the client has been disconnected for a whole session timeout (4 s) the session is
    presumed expired (Curator's simulation), the held set is marked lost (not fenced: its
    statement has ended), the retrier drops the handle with one WARNING, and its thread ends.
    The kazoo client is abandoned (no reconnect loop to a dead server is left running).

    Then the server is started again on its data, to look at what was left: another session's
    LOCK TABLE lock (persistent) untouched, and the written-off ephemeral locks gone with their
    session, which nobody resumed; the manager works again on a new session."""
    svc = LockService()
    fenced: list[tuple[str, str]] = []
    svc.add_fencer(lambda handle, reason: fenced.append((handle, reason)))
    caplog.set_level(logging.WARNING, logger="sparklock")
    with ZooKeeperServer() as server:
        conf = retry_conf(server.address, zk_namespace, "4s")
        table = {"database": "default", "table": "t"}
        lock = {"object": table, "mode": "EXCLUSIVE", "session": "other", "conf": conf}
        svc.lock(read_request(ExplicitLockRequest, lock))
        handle = svc.acquire(insert_facts(conf, "g"))
        held = svc.held(handle)
        assert held is not None and any(i.name == "default@pt@p=g" for i in held.locks)
        manager = held.manager
        held_session = manager.session_id
        try:
            died = time.monotonic()  # kazoo cannot see it go before this
            server.stop(kill=True)
            with pytest.raises(UnlockError, match="UNLOCK_FAILED: .*p=g/LOCK-EXCLUSIVE-"):
                svc.release(handle)
            assert time.monotonic() - died < 4.0, "the release took the whole session timeout"
            assert svc.unreleased() == [handle]  # reported and kept at first
            assert not held.lost and fenced == []
            assert retriers()
            assert wait_for(lambda: svc.unreleased() == [], 15), svc.unreleased()
            given_up_after = time.monotonic() - died
            assert wait_for(lambda: not retriers(), 5), retriers()
            assert held.lost and "ZooKeeper session" in str(held.lost_reason)
            assert fenced == []  # its statement had ended with UNLOCK_FAILED: nothing to fence
            assert given_up_after >= 4.0  # not before the session can have expired
            [warning] = gave_up(caplog.records)
            assert handle in warning and "its locks are lost" in warning
            assert manager.shared_client.client is None  # abandoned, not reconnecting
            print(
                f"\nhandle given up {given_up_after:.2f} s after the server died (session "
                f"timeout 4 s): {held.lost_reason}"
            )
            server.start()
            with inspecting(server.address) as zk:
                explicit = [("default/t", "EXPLICIT")]
                assert wait_for(lambda: lock_types(zk, zk_namespace) == explicit, 15)
                again = acquire_within(svc, insert_facts(conf, "h"), 15)
                assert manager.session_id not in (None, held_session)
                svc.release(again)
                svc.unlock(read_request(UnlockRequest, lock))
                assert lock_nodes(zk, zk_namespace) == {}
        finally:
            manager.close()


def test_no_presumed_expiry_when_zookeeper_is_back_in_time(zk_namespace):
    """A short outage (kill, restart on the same data) within the session timeout: the session
    survives, nothing is written off even past the timeout since the disconnect, the release
    that failed during the outage is retried and done, and the other lock set is still held
    and released normally. The timeout (20 s) leaves room for a server JVM that restarts slowly
    on a loaded machine."""
    timeout = 20.0
    svc = LockService()
    fenced: list[tuple[str, str]] = []
    svc.add_fencer(lambda handle, reason: fenced.append((handle, reason)))
    with ZooKeeperServer() as server:
        conf = retry_conf(server.address, zk_namespace, f"{timeout:.0f}s")
        kept = svc.acquire(insert_facts(conf, "k"))
        failing = svc.acquire(insert_facts(conf, "f"))
        held = svc.held(kept)
        manager = held.manager
        session = manager.session_id
        try:
            died = time.monotonic()  # kazoo cannot see it go before this
            server.stop(kill=True)
            with pytest.raises(UnlockError, match="UNLOCK_FAILED"):
                svc.release(failing)
            assert svc.unreleased() == [failing]
            server.start()  # same port and data: the session (and its ephemeral nodes) survive
            assert wait_for(lambda: manager.shared_client.connected, 10)
            outage = time.monotonic() - died
            assert outage < timeout, "the outage outlasted the session timeout"
            print(f"\nreconnected {outage:.2f} s after the server died (timeout {timeout:.0f} s)")
            # Past the session timeout since the disconnect: a simulation that was not called
            # off by the reconnection would have fired by then.
            past = died + timeout + 1.0 - time.monotonic()
            assert not wait_for(lambda: fenced or held.lost, past)
            assert manager.session_id == session
            assert wait_for(lambda: svc.unreleased() == [], 10), svc.unreleased()
            assert wait_for(lambda: not retriers(), 5), retriers()
            with inspecting(server.address) as zk:
                nodes = lock_nodes(zk, zk_namespace)
                assert {p.split("/")[-2] for p in nodes} == {"default", "pt", "p=k"}
                assert {zk.exists(p).ephemeralOwner for p in nodes} == {session}
                svc.release(kept)  # normally: no error
                assert lock_nodes(zk, zk_namespace) == {}
            assert fenced == [] and not held.lost
        finally:
            manager.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_client_whose_connection_thread_ended_is_replaced(zk_server, zk_namespace):
    """kazoo ends its connection thread for good on an error its loop does not handle (an
    answer whose xid does not match its request's, as a stream with a hole gives): it never
    reconnects. The held locks are reported lost at once and the next statement connects anew,
    instead of every statement waiting out its budget on a client that cannot connect."""
    svc = LockService()
    fenced: list[tuple[str, str]] = []
    svc.add_fencer(lambda handle, reason: fenced.append((handle, reason)))
    conf = retry_conf(zk_server.address, zk_namespace, "8s")
    first = svc.acquire(insert_facts(conf, "a"))
    held = svc.held(first)
    manager = held.manager
    session = manager.session_id
    handler = manager.shared_client.client._connection
    reader = handler._read_socket

    def unmatched(read_timeout):  # a fault in kazoo's reader: what a mismatched xid raises
        handler._read_socket = reader
        raise RuntimeError("xids do not match, expected 7 received 8")

    handler._read_socket = unmatched
    try:
        assert wait_for(lambda: handler.connection_stopped.is_set(), 15), "the thread lives"
        assert wait_for(lambda: held.lost, 5), "the locks of the ended client are not lost"
        assert "connection thread ended" in (held.lost_reason or ""), held.lost_reason
        started = time.monotonic()
        second = svc.acquire(insert_facts(conf, "b"))
        assert time.monotonic() - started < 5
        assert manager.session_id not in (None, session)
        svc.release(second)
        assert fenced and fenced[0][0] == first
    finally:
        manager.close()


def test_closing_the_manager_ends_the_release_retry(zk_namespace, caplog):
    """A release retried in the background (session timeout 30 s: no presumed expiry in
    sight) stops being retried when its manager is closed: one WARNING, the thread ends."""
    svc = LockService()
    caplog.set_level(logging.WARNING, logger="sparklock")
    with ZooKeeperServer() as server:
        handle = svc.acquire(insert_facts(retry_conf(server.address, zk_namespace, "30s"), "c"))
        manager = svc.held(handle).manager
        try:
            server.stop(kill=True)
            with pytest.raises(UnlockError, match="UNLOCK_FAILED"):
                svc.release(handle)
            assert svc.unreleased() == [handle] and retriers()
            manager.close()
            closed = time.monotonic()
            assert wait_for(lambda: svc.unreleased() == [], 10), svc.unreleased()
            assert wait_for(lambda: not retriers(), 5), retriers()
            [warning] = gave_up(caplog.records)
            assert handle in warning and "closed" in warning
            print(f"\nhandle given up {time.monotonic() - closed:.2f} s after the close")
        finally:
            manager.close()
    fresh = get_manager(config_of(retry_conf(server.address, zk_namespace, "30s")))
    assert fresh is not manager and not fresh.closed  # a closed manager is not handed out again
    fresh.close()


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
