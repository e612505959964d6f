"""The lease of the ZooKeeper locks (sparklock/managers/zookeeper/wire/lease.py) on a real server:
renewed by kazoo's own pings, and lapsing before the server expires the session when the link
is cut. The JVM side is exercised by tests/test_nemesis.py."""

from __future__ import annotations

import threading
import time

import pytest
from kazoo.client import KazooClient

from sparklock.config import SparkLockConfig
from sparklock.errors import ConfigError
from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from tests.support.lease_faults import wait_until
from tests.support.tcp_proxy import TcpProxy
from tests.support.zk_tree import inspecting

pytestmark = [pytest.mark.zookeeper]

MARGIN = "spark.sparklock.zookeeper.lease.margin"
TIMEOUT = "spark.sparklock.zookeeper.sessionTimeout"


def zookeeper_section(conf: dict[str, str]):
    return SparkLockConfig.from_conf({"spark.sparklock.manager": "zookeeper", **conf}).backend


def test_margin_defaults_to_a_third_and_is_validated():
    assert zookeeper_section({}).lease_margin is None
    assert zookeeper_section({TIMEOUT: "4s", MARGIN: "1s"}).lease_margin == 1.0
    for bad in ("3s", "later"):
        with pytest.raises(ConfigError) as err:
            zookeeper_section({TIMEOUT: "4s", MARGIN: bad})
        assert MARGIN in str(err.value) and "duration" in str(err.value)


def test_margin_has_a_floor_of_a_tenth_of_the_session_timeout():
    """A margin of 0 leaves the JVM no time to fence before the server could expire the session."""
    assert zookeeper_section({TIMEOUT: "4s", MARGIN: "400ms"}).lease_margin == 0.4
    for small in ("0", "0s", "399ms"):
        with pytest.raises(ConfigError) as err:
            zookeeper_section({TIMEOUT: "4s", MARGIN: small})
        text = str(err.value)
        assert MARGIN in text and "from 0.4s" in text and "below 2.66667s" in text, text


def test_pings_renew_the_lease_without_requests(zk_server, zk_namespace):
    with ZooKeeperLockManager.connect(
        zk_server.address, zk_namespace, session_timeout=1.5
    ) as manager:
        manager.list_locks()  # connects
        first_epoch, first = manager.lease_term()
        assert first_epoch == manager.session_id
        lowest = float("inf")
        end = time.monotonic() + 4.0
        while time.monotonic() < end:  # idle: only kazoo's pings go out
            epoch, deadline = manager.lease_term()
            assert epoch == first_epoch
            lowest = min(lowest, deadline - time.monotonic_ns())
            time.sleep(0.02)
        assert lowest > 0, "the lease lapsed on a healthy connection"
        assert manager.lease_term()[1] > first + 2e9  # renewed by pings, 4 s on
        assert manager.lease_until() == manager.lease_term()[1] / 1e9


def test_lease_lapses_before_the_server_expires_the_session(zk_server, zk_namespace):
    host, port = zk_server.address.rsplit(":", 1)
    with TcpProxy(host, int(port)) as proxy:
        quorum = f"127.0.0.1:{proxy.port}"
        with (
            ZooKeeperLockManager.connect(quorum, zk_namespace, session_timeout=2.0) as manager,
            inspecting(zk_server.address) as watcher,
        ):
            client = manager.shared_client.ensure_started()
            node = client.create(f"/{zk_namespace}-probe", ephemeral=True, makepath=True)
            gone = threading.Event()
            gone_at: list[int] = []

            def seen(_event) -> None:
                gone_at.append(time.monotonic_ns())
                gone.set()

            assert watcher.exists(node, watch=seen) is not None
            proxy.cut()
            cut_at = time.monotonic_ns()
            assert gone.wait(20), "the server did not expire the session"
            _, deadline = manager.lease_term()
            margin = 2.0 / 3
            print(
                f"lease lapsed {(deadline - cut_at) / 1e6:.0f} ms after the cut, the server "
                f"expired the session {(gone_at[0] - cut_at) / 1e6:.0f} ms after it"
            )
            assert deadline <= gone_at[0] - margin * 1e9 * 0.9


def test_a_grant_is_bound_to_the_session_it_was_taken_in(zk_server, zk_namespace):
    """Locks taken in session 1; session 1 expired for real and session 2 started before the
    statement is bound: it gets session 1's lease, already lapsed, never session 2's fresh one
    (its ephemeral locks died with session 1), and its set is lost."""
    with ZooKeeperLockManager.connect(
        zk_server.address, zk_namespace, session_timeout=4.0
    ) as manager:
        request = LockRequest(LockObject.of_table("default", "bound"), LockMode.EXCLUSIVE)
        held = manager.acquire([request], owner="s1", query_id="bound-q")
        first = manager.session_id
        assert first and held.lease_epoch == first
        assert manager.held_lease(held)[0] == first
        session_id, password = manager.shared_client.client.client_id
        thief = KazooClient(hosts=zk_server.address, client_id=(session_id, password))
        thief.start(10)  # resumes session 1 and closes it: expired for real
        thief.stop()
        thief.close()
        wait_until(lambda: manager.lease_term()[0] not in (0, first), 20, "a second session")
        epoch, deadline = manager.held_lease(held)
        assert epoch == first and deadline <= time.monotonic_ns()
        assert held.lost
