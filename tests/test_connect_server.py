"""``python -m sparklock connect-server`` with the real pyspark Connect client, and
``sparklock.configure(SparkSession.builder.remote("local[2]"))`` in-process: sessions are owners,
SHOW LOCKS names the Connect user, interrupts end lock waits at once, a vanished client leaves no
lock behind."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from tests.support.servers import REPO, ServerProcess, wait_until
from tests.support.spark_versions import needs_spark
from tests.test_thriftserver import lock_nodes, server_conf

pytestmark = [
    pytest.mark.spark,
    needs_spark((4, 0), "a Spark Connect server in the pyspark wheel (spark-connect_*.jar)"),
]

pytest.importorskip("grpc", reason="the Connect client needs the connect extra (.[connect])")
pytest.importorskip("pyarrow", reason="the Connect client needs the connect extra (.[connect])")

from pyspark.errors import PySparkException  # noqa: E402
from pyspark.sql.connect.session import SparkSession as RemoteSession  # noqa: E402


@pytest.fixture(scope="module")
def server(zk_server, tmp_path_factory):
    namespace = "sparklock_connect_test"
    srv = ServerProcess(
        "connect-server", server_conf(zk_server, namespace), tmp_path_factory.mktemp("connect")
    )
    srv.wait_ready()
    srv.namespace = namespace
    assert srv.url == f"sc://127.0.0.1:{srv.port}"
    admin = connect(srv, "admin")
    admin.sql("CREATE TABLE t (a INT) USING parquet")
    admin.stop()
    yield srv
    assert srv.terminate() == 0, srv.log_tail()


def connect(server, user: str):
    """A new Connect session of ``user`` (its own lock owner on the server)."""
    return RemoteSession.builder.remote(f"{server.url}/;user_id={user}").create()


@pytest.fixture
def clean(server, zk):
    assert lock_nodes(zk, server.namespace) == []
    yield
    admin = connect(server, "admin")
    try:
        admin.sql("UNLOCK TABLE t")
    except Exception:  # noqa: BLE001 - not locked
        pass
    admin.stop()
    wait_until(lambda: lock_nodes(zk, server.namespace) == [], 30)


def test_two_users_conflict_and_show_locks_names_the_user(server, zk, clean):
    alice, bob = connect(server, "alice"), connect(server, "bob")
    try:
        alice.sql("LOCK TABLE t EXCLUSIVE")
        alice.sql("INSERT INTO t VALUES (1)")  # her own lock never blocks her
        bob.conf.set("spark.sparklock.lock.numRetries", "1")
        with pytest.raises(PySparkException, match="LOCK_CONFLICT") as conflict:
            bob.sql("INSERT INTO t VALUES (2)")
        # the condition, SQLSTATE and parameters of the server's SparkLockException
        assert conflict.value.getCondition() == "LOCK_CONFLICT"
        assert conflict.value.getSqlState() == "55P03"
        assert '"user":"alice"' in conflict.value.getMessageParameters()["holders"]
        [row] = bob.sql("SHOW LOCKS t EXTENDED").collect()
        assert (row["name"], row["mode"], row["lock_type"], row["user"]) == (
            "default@t",
            "EXCLUSIVE",
            "EXPLICIT",
            "alice",
        )
        assert row["state"] == "ACQUIRED" and row["agent"].startswith("connect/")
        bob.sql("UNLOCK TABLE t")  # across sessions
        bob.sql("INSERT INTO t VALUES (2)")
    finally:
        alice.stop()
        bob.stop()


def _wait_in_thread(session, sql: str, tag: str) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def run() -> None:
        session.addTag(tag)  # operation tags are per client thread
        try:
            session.sql(sql).collect()
            box["ok"] = True
        except Exception as e:  # noqa: BLE001 - inspected by the test
            box["error"] = str(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


@pytest.mark.parametrize("how", ["interruptAll", "interruptTag"])
def test_interrupt_ends_a_wait_at_once(server, zk, clean, how):
    alice, bob = connect(server, "alice"), connect(server, "bob")
    try:
        alice.sql("LOCK TABLE t EXCLUSIVE")
        bob.conf.set("spark.sparklock.lock.numRetries", "600")  # a 120 s budget
        thread, box = _wait_in_thread(bob, "INSERT INTO t VALUES (3)", "waiter")
        wait_until(lambda: len(lock_nodes(zk, server.namespace)) >= 2, 60)
        bob.interruptAll() if how == "interruptAll" else bob.interruptTag("waiter")
        took = wait_until(lambda: len(lock_nodes(zk, server.namespace)) == 1, 60)
        assert took < 30, took  # at once (seconds on a loaded machine), not at the budget
        thread.join(60)
        assert "ok" not in box and "LOCK_CONFLICT" not in box.get("error", "")
    finally:
        alice.stop()
        bob.stop()


CLIENT = textwrap.dedent(
    """
    import sys
    from pyspark.sql.connect.session import SparkSession
    spark = SparkSession.builder.remote(sys.argv[1] + "/;user_id=ghost").create()
    spark.conf.set("spark.sparklock.lock.numRetries", "600")
    spark.sql(sys.argv[2]).collect()
    """
)


@pytest.mark.parametrize(
    "sql,locks_while_running",
    [
        ("INSERT INTO t VALUES (4)", 2),  # waits behind alice's lock
        ("SELECT count(*) FROM t CROSS JOIN range(100000000000)", 2),  # runs (with alice SHARED)
    ],
)
def test_client_killed_leaves_no_lock(server, zk, clean, sql, locks_while_running):
    alice = connect(server, "alice")
    try:
        alice.sql("LOCK TABLE t SHARED")
        client = subprocess.Popen(
            [sys.executable, "-c", CLIENT, server.url, sql],
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        wait_until(lambda: len(lock_nodes(zk, server.namespace)) >= locks_while_running, 90)
        client.kill()
        client.wait()
        # the server notices the abandoned operation within senderMaxStreamDuration (20s) +
        # detachedTimeout (15s) + maintenanceInterval (5s), the connect-server's defaults
        wait_until(lambda: len(lock_nodes(zk, server.namespace)) == 1, 150)
    finally:
        alice.stop()


def test_remote_local_in_process(tmp_path):
    script = textwrap.dedent(
        """
        from pyspark.sql import SparkSession
        import sparklock
        spark = sparklock.configure(SparkSession.builder.remote("local[2]")).getOrCreate()
        spark.sql("CREATE TABLE rt (a INT) USING parquet")
        spark.sql("LOCK TABLE rt EXCLUSIVE")
        [row] = spark.sql("SHOW LOCKS rt EXTENDED").collect()
        print("ROW", row["name"], row["mode"], row["user"])
        from pyspark.sql.session import SparkSession as Classic
        other = Classic._instantiatedSession.newSession()  # another owner in the same driver
        other.conf.set("spark.sparklock.lock.numRetries", "1")
        try:
            other.sql("INSERT INTO rt VALUES (1)")
            print("NO CONFLICT")
        except Exception as e:
            print("CONFLICT", "LOCK_CONFLICT" in str(e))
        spark.sql("UNLOCK TABLE rt")
        other.sql("INSERT INTO rt VALUES (1)")
        print("COUNT", spark.sql("SELECT count(*) AS n FROM rt").collect()[0]["n"])
        spark.stop()
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [x for x in r.stdout.splitlines() if x.split(" ")[0] in ("ROW", "CONFLICT", "COUNT")]
    assert r.returncode == 0, r.stderr[-3000:]

    assert lines == [f"ROW default@rt EXCLUSIVE {getpass.getuser()}", "CONFLICT True", "COUNT 1"]
