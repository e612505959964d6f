"""Load: 32 concurrent JDBC sessions (readers and writers of shared tables, some cancelling)
against one sparklock Thrift server on ZooKeeper. The merged journal must show no incompatible
overlap and no unreleased lock, no statement may fail except by LOCK_CONFLICT (budget run out) or
its own cancellation, the ZooKeeper tree ends empty, and the server used one ZooKeeper connection.

``SPARKLOCK_LOAD_SESSIONS`` / ``SPARKLOCK_LOAD_SECONDS`` scale it (defaults 32, 30)."""

from __future__ import annotations

import os

import pytest

from tests.support import jdbc_client
from tests.support.servers import ServerProcess, beeline
from tests.test_stress import check_journal, read_jsonl
from tests.test_thriftserver import lock_nodes, server_conf

SESSIONS = int(os.environ.get("SPARKLOCK_LOAD_SESSIONS", "32"))
SECONDS = int(os.environ.get("SPARKLOCK_LOAD_SECONDS", "30"))
TABLES = 3
ALLOWED = {"OK", "LOCK_CONFLICT", "LOCK_WAIT_CANCELLED", "CANCELLED"}

pytestmark = [pytest.mark.spark, pytest.mark.load]  # the server under load: the newest line


def test_32_sessions_no_overlap_no_leak_one_connection(zk_server, zk, tmp_path):
    namespace = "sparklock_thrift_load"
    journal = tmp_path / "journal"
    baseline = zk_server.connection_count() - 1  # the test's own inspecting client (zk)
    srv = ServerProcess(
        "thriftserver",
        server_conf(zk_server, namespace),
        tmp_path,
        env={"SPARKLOCK_JOURNAL": str(journal)},
    )
    try:
        srv.wait_ready()
        create = "; ".join(f"CREATE TABLE t{i} (a INT) USING parquet" for i in range(TABLES))
        assert beeline(srv.port, "admin", create).returncode == 0
        url = f"jdbc:hive2://127.0.0.1:{srv.port}/default"
        lines = jdbc_client.run("load", url, str(SESSIONS), str(SECONDS), str(TABLES), "7")
        outcomes = {ln[1]: int(ln[2]) for ln in lines if ln[0] == "OUTCOME"}
        print(f"load outcomes ({SESSIONS} sessions, {SECONDS}s): {outcomes}")
        assert set(outcomes) <= ALLOWED, outcomes
        assert outcomes.get("OK", 0) > SESSIONS
        assert zk_server.connection_count() - 1 - baseline == 1  # the server's one connection
        assert lock_nodes(zk, namespace) == []
    finally:
        assert srv.terminate() == 0, srv.log_tail()
    overlaps, unreleased, intervals = check_journal(read_jsonl(sorted(journal.glob("*.jsonl"))))
    print(f"{intervals} lock intervals checked; overlaps {len(overlaps)}")
    assert intervals > 0
    assert overlaps == [], overlaps[:5]
    assert unreleased == [], unreleased[:5]
    assert lock_nodes(zk, namespace) == []
