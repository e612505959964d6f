"""``python -m sparklock thriftserver`` with real beeline clients (HiveServer2 protocol) and a real
ZooKeeper: sessions are owners, SHOW LOCKS names the user, cancellations and vanished clients
leave no lock behind, SIGTERM stops cleanly, one ZooKeeper connection serves every session."""

from __future__ import annotations

import signal
import subprocess

import pytest
from kazoo.exceptions import NoNodeError

from tests.support.servers import (
    ServerProcess,
    beeline,
    beeline_background,
    rows,
    wait_until,
)

# A statement that holds SHARED on t for as long as it runs (until cancelled).
LONG_READ = "SELECT count(*) FROM t CROSS JOIN range(100000000000)"

pytestmark = pytest.mark.spark  # a Spark driver (the server): runs on every Spark version


def lock_nodes(zk, namespace: str) -> list[tuple[str, str]]:
    """Every lock znode under the namespace: (path, data)."""
    found = []

    def walk(path: str) -> None:
        try:
            children = zk.get_children(path)
        except NoNodeError:  # removed while we looked
            return
        for child in children:
            full = f"{path}/{child}"
            if child.startswith("LOCK-"):
                try:
                    found.append((full, zk.get(full)[0].decode()))
                except NoNodeError:
                    pass
            else:
                walk(full)

    if zk.exists(f"/{namespace}"):
        walk(f"/{namespace}")
    return found


def server_conf(zk_server, namespace: str) -> dict[str, str]:
    return {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": zk_server.address,
        "spark.sparklock.zookeeper.namespace": namespace,
        "spark.sparklock.lock.retryInterval": "200ms",  # budget 100 x 200ms = 20s
        "spark.ui.enabled": "false",
    }


@pytest.fixture(scope="module")
def server(zk_server, tmp_path_factory):
    """One Thrift server for the module (start-up costs most of the time)."""
    namespace = "sparklock_thrift_test"
    baseline = zk_server.connection_count()
    srv = ServerProcess(
        "thriftserver", server_conf(zk_server, namespace), tmp_path_factory.mktemp("thrift")
    )
    srv.wait_ready()
    srv.namespace = namespace
    srv.zk_baseline = baseline
    assert srv.url == f"jdbc:hive2://127.0.0.1:{srv.port}/"
    created = beeline(srv.port, "admin", "CREATE TABLE t (a INT) USING parquet")
    assert created.returncode == 0, created.stdout + created.stderr
    yield srv
    assert srv.terminate() == 0, srv.log_tail()


@pytest.fixture
def clean(server, zk):
    """Every test starts and ends with no lock in the server's namespace."""
    assert lock_nodes(zk, server.namespace) == []
    yield
    beeline(server.port, "admin", "UNLOCK TABLE t")
    wait_until(lambda: lock_nodes(zk, server.namespace) == [], 30)


def test_two_users_conflict_and_show_locks_names_the_user(server, zk, clean):
    r = beeline(server.port, "alice", "LOCK TABLE t EXCLUSIVE")
    assert r.returncode == 0, r.stdout + r.stderr
    # keep (the default): alice's explicit lock outlives her session, as in Hive
    r = beeline(
        server.port,
        "bob",
        "SET spark.sparklock.lock.numRetries=1; INSERT INTO t VALUES (1)",
    )
    assert r.returncode != 0
    out = r.stdout + r.stderr
    # the JDBC driver's SQLException.getSQLState() (beeline prints it as state=), the holder's
    # user in the message, and no Java stack
    assert "LOCK_CONFLICT" in out and "(state=55P03," in out, out
    assert "user=alice" in out and "at io.sparklock" not in out, out
    shown = rows(beeline(server.port, "bob", "SHOW LOCKS t EXTENDED"))
    assert [(x[0], x[1], x[4], x[6], x[7]) for x in shown if len(x) == 14] == [
        ("default@t", "EXCLUSIVE", "EXPLICIT", "127.0.0.1", "alice")
    ]
    # its state, the JDBC session it was taken for (the agent), whose server lives
    assert [(x[8], x[12][:7], x[13]) for x in shown if len(x) == 14] == [
        ("ACQUIRED", "thrift/", "true")
    ]
    # LOCK in one session, UNLOCK in another (legacy scripts); then bob writes
    r = beeline(server.port, "bob", "UNLOCK TABLE t; INSERT INTO t VALUES (1)")
    assert r.returncode == 0, r.stdout + r.stderr
    assert lock_nodes(zk, server.namespace) == []


def test_a_sessions_own_lock_never_blocks_its_statements(server, zk, clean):
    r = beeline(
        server.port,
        "carol",
        "SET spark.sparklock.lock.numRetries=1; LOCK TABLE t EXCLUSIVE; "
        "INSERT INTO t VALUES (2); SELECT count(*) FROM t; UNLOCK TABLE t",
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_running_statement_locks_carry_user_and_client(server, zk, clean):
    reader = beeline_background(server.port, "dave", LONG_READ)
    try:
        wait_until(lambda: len(lock_nodes(zk, server.namespace)) >= 2, 60)
        datas = [d for _, d in lock_nodes(zk, server.namespace)]
        assert all(d.split(":")[4] == "127.0.0.1" for d in datas), datas
        assert all(":u=dave" in d.split(":", 5)[5] for d in datas), datas  # sparklock's fields
    finally:
        reader.kill()
        reader.wait()


def _queued_behind_alice(server, zk) -> subprocess.Popen:
    r = beeline(server.port, "alice", "LOCK TABLE t EXCLUSIVE")
    assert r.returncode == 0, r.stdout + r.stderr
    # a 120 s budget (600 x 200ms): ending "at once" is far from ending at the budget
    waiter = beeline_background(
        server.port, "bob", "SET spark.sparklock.lock.numRetries=600; INSERT INTO t VALUES (3)"
    )
    # bob's place in line: a second lock node on default@t (queue policy)
    wait_until(lambda: len(lock_nodes(zk, server.namespace)) >= 2, 60)
    return waiter


def cancelled_waits(server) -> int:
    """How many LOCK_WAIT_CANCELLED the server has logged so far (its whole log: a stack trace
    after the line can push it out of any fixed tail)."""
    return server.log_tail(10**7).count("LOCK_WAIT_CANCELLED")


def test_beeline_cancel_ends_a_wait_at_once(server, zk, clean):
    before = cancelled_waits(server)
    waiter = _queued_behind_alice(server, zk)
    try:
        waiter.send_signal(signal.SIGINT)  # beeline: Ctrl-C = JDBC Statement.cancel()
        took = wait_until(lambda: len(lock_nodes(zk, server.namespace)) == 1, 60)
        assert took < 30, took  # at once (seconds on a loaded machine), not at the 120 s budget
    finally:
        waiter.kill()
        out = waiter.communicate()[0]
    assert "LOCK_CONFLICT" not in out
    # the server logs the ended wait after its lock node is gone: wait for the line itself
    wait_until(lambda: cancelled_waits(server) > before, 30)
    [(_, data)] = lock_nodes(zk, server.namespace)
    assert ":EXPLICIT:" in data


def test_another_jdbc_session_sees_the_waiter_and_whom_it_waits_for(server, zk, clean):
    waiter = _queued_behind_alice(server, zk)
    try:
        shown = [
            x for x in rows(beeline(server.port, "carol", "SHOW LOCKS t EXTENDED")) if len(x) == 14
        ]
        [lock] = [x for x in shown if x[8] == "ACQUIRED"]
        [wait] = [x for x in shown if x[8] == "WAITING"]
        assert (lock[0], lock[1], lock[7]) == ("default@t", "EXCLUSIVE", "alice")
        assert (wait[0], wait[1], wait[7], wait[5]) == (
            "default@t",
            "EXCLUSIVE",
            "bob",
            "INSERT INTO t VALUES (3)",
        )
        assert wait[9] == f"EXCLUSIVE default@t query_id={lock[2]}"  # blocked_by alice's lock
        assert wait[10] == "" and wait[11].isdigit()  # acquired_at, wait_since
        assert wait[12].startswith("thrift/") and wait[12] != lock[12]  # bob's own session
    finally:
        waiter.kill()
        waiter.wait()
    wait_until(lambda: len(lock_nodes(zk, server.namespace)) == 1, 30)
    shown = rows(beeline(server.port, "carol", "SHOW LOCKS t EXTENDED"))
    assert [x[8] for x in shown if len(x) == 14] == ["ACQUIRED"]


def test_client_killed_while_waiting_leaves_no_lock(server, zk, clean):
    waiter = _queued_behind_alice(server, zk)
    waiter.kill()  # SIGKILL: the connection drops, the server closes the session
    waiter.wait()
    wait_until(lambda: len(lock_nodes(zk, server.namespace)) == 1, 30)


def test_client_killed_while_running_leaves_no_lock(server, zk, clean):
    reader = beeline_background(server.port, "erin", LONG_READ)
    wait_until(lambda: len(lock_nodes(zk, server.namespace)) >= 2, 60)
    reader.kill()
    reader.wait()
    wait_until(lambda: lock_nodes(zk, server.namespace) == [], 30)


def test_explicit_locks_released_at_session_close_when_configured(server, zk, clean):
    r = beeline(
        server.port,
        "frank",
        "SET spark.sparklock.explicit.onSessionClose=release; LOCK TABLE t SHARED",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    wait_until(lambda: lock_nodes(zk, server.namespace) == [], 15)


def test_one_zookeeper_connection_for_every_session(server, zk_server):
    # the test's own inspecting client (fixture zk) is not open in this test
    sessions = [
        beeline_background(server.port, f"u{i}", "SELECT count(*) FROM t") for i in range(4)
    ]
    for s in sessions:
        assert s.wait(180) == 0
    assert zk_server.connection_count() - server.zk_baseline == 1


def test_sigterm_mid_statement_leaves_no_lock(zk_server, zk, tmp_path):
    namespace = "sparklock_thrift_sigterm"
    srv = ServerProcess("thriftserver", server_conf(zk_server, namespace), tmp_path)
    srv.wait_ready()
    assert beeline(srv.port, "admin", "CREATE TABLE t (a INT) USING parquet").returncode == 0
    reader = beeline_background(srv.port, "gina", LONG_READ)
    try:
        wait_until(lambda: len(lock_nodes(zk, namespace)) >= 2, 60)
        assert srv.terminate() == 0, srv.log_tail()
        assert lock_nodes(zk, namespace) == []
    finally:
        reader.kill()
        reader.wait()
