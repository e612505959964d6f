"""The metrics through a server: ``python -m sparklock thriftserver`` with its UI on, real beeline
users making a conflict and a wait, and the server's own ``/metrics/json/`` counting them."""

from __future__ import annotations

import pytest

from tests.support.servers import ServerProcess, beeline, beeline_background, wait_until
from tests.support.spark_ui import sparklock_metrics
from tests.support.zookeeper import free_port

pytestmark = pytest.mark.spark  # a Spark driver (the server): runs on every Spark version


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    ui_port = free_port()
    conf = {
        "spark.ui.enabled": "true",
        "spark.ui.port": str(ui_port),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sparklock.lock.retryInterval": "200ms",  # budget 100 x 200ms = 20s
    }
    srv = ServerProcess("thriftserver", conf, tmp_path_factory.mktemp("thrift-metrics"))
    srv.wait_ready()
    srv.ui = f"http://127.0.0.1:{ui_port}"
    created = beeline(srv.port, "admin", "CREATE TABLE t (a INT) USING parquet")
    assert created.returncode == 0, created.stdout + created.stderr
    yield srv
    assert srv.terminate() == 0, srv.log_tail()


def test_the_server_counts_its_sessions_conflicts_and_waits(server):
    before = sparklock_metrics(server.ui)
    locked = beeline(server.port, "alice", "LOCK TABLE t EXCLUSIVE")  # kept after the session
    assert locked.returncode == 0, locked.stdout + locked.stderr
    refused = beeline(
        server.port, "bob", "SET spark.sparklock.lock.numRetries=1; SELECT count(*) FROM t"
    )
    assert "LOCK_CONFLICT" in refused.stdout + refused.stderr
    waiter = beeline_background(server.port, "carol", "SELECT count(*) FROM t")
    try:
        wait_until(lambda: sparklock_metrics(server.ui)["waiting"] == 1, 60)
        unlocked = beeline(server.port, "admin", "UNLOCK TABLE t")
        assert unlocked.returncode == 0, unlocked.stdout + unlocked.stderr
        out, _ = waiter.communicate(timeout=120)
    finally:
        if waiter.poll() is None:
            waiter.kill()
    assert waiter.returncode == 0, out
    after = sparklock_metrics(server.ui)
    assert after["conflicts"] - before["conflicts"] == 1
    # alice's LOCK TABLE and carol's SELECT were granted (bob's SET and admin's UNLOCK lock nothing)
    assert after["acquisitions"] - before["acquisitions"] == 2
    assert after["releases"] - before["releases"] == 1
    assert after["lockWaitTime"]["count"] - before["lockWaitTime"]["count"] == 2
    assert after["waiting"] == 0 and after["locksHeld"] == 0
