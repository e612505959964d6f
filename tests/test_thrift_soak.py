"""Soak: ``python -m sparklock thriftserver`` on ZooKeeper under 16 concurrent PyHive clients that
each connect, run a few statements (a read, a CTAS and its DROP, a partitioned insert, a path
write) and disconnect, again and again, as dbt, Superset and Airflow's Hive hooks do.

Checked at the end: no statement failed except by an expected ``LOCK_CONFLICT``; no lock is left
(``SHOW LOCKS`` through the server, and the ZooKeeper tree); the server used one ZooKeeper
connection the whole time (the ZooKeeper server's ``cons``); the JVM's live class count and its
heap after a full GC did not grow from the end of the warm-up (the first third of the run, at most
2 minutes) to the end: both read with every client disconnected, so neither counts work in flight.

``SPARKLOCK_SOAK_SECONDS`` sets the duration (CI: 40 s; the long run is 600 s; every client
completes at least one round per phase, so a loaded machine stretches a short run);
``SPARKLOCK_SOAK_SESSIONS`` the number of concurrent clients (16). Spark's own history of jobs,
statements and sessions is bounded by its usual ``retained*`` keys so that a growth beyond them
would be the server's, not the bookkeeping Spark is configured to keep.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

import pytest

from tests.support.jvm_stats import java_child, sample
from tests.support.servers import ServerProcess
from tests.test_thriftserver import lock_nodes, server_conf

SECONDS = int(os.environ.get("SPARKLOCK_SOAK_SECONDS", "40"))
SESSIONS = int(os.environ.get("SPARKLOCK_SOAK_SESSIONS", "16"))
PARTITIONS = 3  # few partitions and path targets: clients meet on them and sometimes conflict
RETAINED = {
    "spark.ui.retainedJobs": "100",
    "spark.ui.retainedStages": "100",
    "spark.sql.ui.retainedExecutions": "100",
    "spark.sql.thriftServer.ui.retainedStatements": "100",
    "spark.sql.thriftServer.ui.retainedSessions": "100",
}
# Growth allowed from the warm-up's end to the run's end (both quiet): well under what a leak per
# session would add over hundreds of sessions, above the noise of JIT / codegen caches filling.
HEAP_SLACK_MIB = 48.0
CLASS_SLACK = 400

# The whole-suite run (newest Spark line) only: a soak costs minutes per run, and what it finds
# (a leak per session, a lock left over) is the server's, not the Spark line's; the reconnect
# and load tests (test_server_reconnect.py, test_thriftserver_load.py) run on every line.
pytestmark = pytest.mark.soak


def client_round(hive, port: int, worker: int, turn: int, out_dir: str) -> list[str]:
    """One client's connection: connect, a few statements, disconnect; each statement's outcome."""
    outcomes = []
    conn = hive.connect(host="127.0.0.1", port=port, username=f"u{worker}", database="default")
    try:
        cursor = conn.cursor()
        table = f"ctas_{worker}_{turn}"
        spot = (worker + turn) % PARTITIONS
        for sql in (
            "SELECT count(*) FROM src",
            f"CREATE TABLE {table} USING parquet AS SELECT * FROM src",
            f"INSERT INTO pt PARTITION (p = 'k{spot}') SELECT id FROM {table}",
            f"DROP TABLE {table}",
            f"INSERT OVERWRITE DIRECTORY '{out_dir}/d{spot}' USING parquet SELECT id FROM src",
        ):
            try:
                cursor.execute(sql)
                if sql.startswith("SELECT"):
                    cursor.fetchall()
                outcomes.append("OK")
            except Exception as exc:  # noqa: BLE001 - every failure is counted by its kind
                text = str(exc)
                outcomes.append("LOCK_CONFLICT" if "LOCK_CONFLICT" in text else f"ERROR {text}")
                if sql.startswith("CREATE TABLE"):
                    break  # nothing to insert from or drop
    finally:
        conn.close()
    return outcomes


class Clients:
    """``SESSIONS`` threads, each a PyHive client connecting, running a round, disconnecting."""

    def __init__(self, hive, port: int, out_dir: str) -> None:
        self.hive, self.port, self.out_dir = hive, port, out_dir
        self.outcomes: Counter[str] = Counter()
        self.errors: list[str] = []
        self.sessions = 0
        self.turns = [0] * SESSIONS
        self._lock = threading.Lock()

    def run(self, seconds: float) -> None:
        """Every client runs rounds for ``seconds`` (at least one each), then all have closed."""
        stop_at = time.monotonic() + seconds
        threads = [
            threading.Thread(target=self._client, args=(n, stop_at)) for n in range(SESSIONS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _client(self, n: int, stop_at: float) -> None:
        while True:
            try:
                got = client_round(self.hive, self.port, n, self.turns[n], self.out_dir)
            except Exception as exc:  # noqa: BLE001 - a failed connect counts as a failure
                got = [f"ERROR connect: {exc}"]
            self.turns[n] += 1
            with self._lock:
                self.sessions += 1
                for outcome in got:
                    kind = outcome.split(" ", 1)[0]
                    self.outcomes[kind] += 1
                    if kind == "ERROR" and len(self.errors) < 10:
                        self.errors.append(outcome[:500])
            if time.monotonic() >= stop_at:
                return


def test_soak_pyhive_sessions(zk_server, zk, tmp_path):
    hive = pytest.importorskip("pyhive.hive", reason="PyHive comes with the dev extra (.[dev])")
    namespace = "sparklock_thrift_soak"
    baseline = zk_server.connection_count() - 1  # the test's own inspecting client (zk)
    conf = {**server_conf(zk_server, namespace), **RETAINED}
    conf["spark.sparklock.lock.numRetries"] = "25"  # 25 x 200ms: some waits run out
    srv = ServerProcess("thriftserver", conf, tmp_path)
    try:
        srv.wait_ready()
        jvm = java_child(srv.proc.pid)
        setup = hive.connect(host="127.0.0.1", port=srv.port, username="admin")
        cursor = setup.cursor()
        cursor.execute("CREATE TABLE src USING parquet AS SELECT id FROM range(100)")
        cursor.execute("CREATE TABLE pt (id BIGINT, p STRING) USING parquet PARTITIONED BY (p)")
        setup.close()
        clients = Clients(hive, srv.port, str(tmp_path / "out"))
        start = time.monotonic()
        warm_up = min(SECONDS / 3, 120)
        clients.run(warm_up)
        warm, warm_sessions = sample(jvm), clients.sessions
        conns = {zk_server.connection_count() - 1 - baseline}
        clients.run(SECONDS - warm_up)
        end = sample(jvm)
        elapsed = time.monotonic() - start
        check = hive.connect(host="127.0.0.1", port=srv.port, username="admin")
        cursor = check.cursor()
        cursor.execute("SHOW LOCKS")
        shown = cursor.fetchall()
        check.close()
        conns.add(zk_server.connection_count() - 1 - baseline)
        nodes = lock_nodes(zk, namespace)
    finally:
        assert srv.terminate() == 0, srv.log_tail()

    measured = clients.sessions - warm_sessions
    print(f"\nsoak: {SESSIONS} clients, {SECONDS}s asked, {elapsed:.0f}s run, {clients.sessions}")
    print(f"  sessions ({measured} after the warm-up), outcomes {dict(clients.outcomes)}")
    print(f"  after warm-up: heap after GC {warm.heap_mib:.1f} MiB, classes {warm.classes}")
    print(f"  at the end:    heap after GC {end.heap_mib:.1f} MiB, classes {end.classes}")
    print(f"  SHOW LOCKS rows {len(shown)}, lock znodes {len(nodes)}, ZooKeeper conns {conns}")
    assert clients.errors == [], clients.errors
    assert set(clients.outcomes) <= {"OK", "LOCK_CONFLICT"}, clients.outcomes
    assert measured >= SESSIONS and clients.outcomes["OK"] > clients.sessions  # it really ran
    assert shown == [] and nodes == []
    assert conns == {1}
    assert end.heap_mib - warm.heap_mib < HEAP_SLACK_MIB, (warm, end)
    assert end.classes - warm.classes < CLASS_SLACK, (warm, end)
