"""A login refused on reconnecting (the password changed on the servers, a Kerberos ticket that
expired): kazoo gives up on such a client for good; sparklock drops it, fences what it held, and
the next statement connects anew — failing at once while the credentials are wrong, working again
once they are right, without restarting the driver. A real SASL ZooKeeper, restarted with
another password file.
"""

from __future__ import annotations

import pytest

from sparklock.config import SparkLockConfig
from sparklock.errors import LockManagerUnavailableError, LocksLostError
from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.wire.security import AUTH, AUTH_PASSWORD
from tests.support.locks import wait_for
from tests.support.sasl import needs_pure_sasl
from tests.support.zk_security import sasl_server

pytestmark = [
    pytest.mark.zookeeper,
    needs_pure_sasl,
]

T = LockObject.of_table("default", "t")


def test_refused_relogin_drops_the_client_and_recovers(tmp_path, zk_namespace):
    root = tmp_path / "sasl"
    server = sasl_server(root, {"alice": "first-password"})
    server.start()
    manager = None
    try:
        conf = {
            "spark.sparklock.manager": "zookeeper",
            "spark.sparklock.zookeeper.quorum": server.address,
            "spark.sparklock.zookeeper.namespace": zk_namespace,
            "spark.sparklock.zookeeper.connectionTimeout": "60s",
            "spark.sparklock.lock.numRetries": "1",
            AUTH: "sasl:DIGEST-MD5:alice",
            AUTH_PASSWORD: "first-password",
        }
        manager = ZooKeeperLockManager(SparkLockConfig.from_conf(conf))
        held = manager.acquire([LockRequest(T, LockMode.SHARED)], owner="o", query_id="q1")
        shared = manager.shared_client
        first = shared.client

        jaas = root / "jaas.conf"
        server.stop()
        jaas.write_text(jaas.read_text().replace("first-password", "second-password"))
        server.start()
        assert wait_for(lambda: shared.client is not first, timeout=30), "client not dropped"
        with pytest.raises(LocksLostError, match="refused the credentials"):
            held.check()  # fenced: what the statement's release reports as LOCKS_LOST
        manager.release(held)
        with pytest.raises(LockManagerUnavailableError) as err:
            manager.acquire([LockRequest(T, LockMode.SHARED)], owner="o", query_id="q2")
        assert AUTH in str(err.value) and "first-password" not in str(err.value)

        server.stop()
        jaas.write_text(jaas.read_text().replace("second-password", "first-password"))
        server.start()
        held = manager.acquire([LockRequest(T, LockMode.SHARED)], owner="o", query_id="q3")
        # q1's nodes stay until the refused session times out on the servers (it cannot be
        # closed: its connection was refused); q3's are the new session's
        mine = {(i.name, i.data.query_id) for i in manager.list_locks()}
        assert {("default", "q3"), ("default@t", "q3")} <= mine
        manager.release(held)
    finally:
        if manager is not None:
            manager.close()
        server.cleanup()
