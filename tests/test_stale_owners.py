"""Owners that can be checked for life: a SIGKILL'd driver's explicit locks are found and removed
by ``python -m sparklock stale``, a living driver's are not (a real second process, a real
ZooKeeper; no Spark)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sparklock.cli import main
from sparklock.locks.model import LockMode, LockRequest, LockType
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from tests.support.locks import wait_for

pytestmark = pytest.mark.zookeeper
DEAD_T = LockObject.of_table("default", "dead_t")
LIVE_T = LockObject.of_table("default", "live_t")

#: A driver that takes one explicit lock as application ``app-dead`` and then waits to be killed.
DRIVER = textwrap.dedent(
    """
    import sys, time
    from sparklock.locks.model import LockMode, LockRequest, LockType
    from sparklock.locks.objects import LockObject
    from sparklock.managers.zookeeper import ZooKeeperLockManager

    address, namespace = sys.argv[1:3]
    m = ZooKeeperLockManager.connect(address, namespace, session_timeout=1.0)
    m.acquire([LockRequest(LockObject.of_table("default", "dead_t"), LockMode.EXCLUSIVE)],
              owner="dead-session", query_id="dead-lock", lock_type=LockType.EXPLICIT,
              agent="app-dead")
    print("locked", flush=True)
    time.sleep(600)
    """
)


def _cli(zk_server, ns: str, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main([*args, "--quorum", zk_server.address, "--namespace", ns], out=out)
    return code, out.getvalue()


def test_a_killed_drivers_explicit_locks_are_stale_a_living_ones_are_not(zk_server, zk_namespace):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, zk_server.address, zk_namespace],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert driver.stdout is not None and driver.stdout.readline().strip() == "locked"
        with ZooKeeperLockManager.connect(zk_server.address, zk_namespace) as living:
            mine = living.acquire(
                [LockRequest(LIVE_T, LockMode.EXCLUSIVE)],
                owner="live-session",
                query_id="live-lock",
                lock_type=LockType.EXPLICIT,
                agent="app-live",
            )
            code, out = _cli(zk_server, zk_namespace, "locks")
            rows = {ln.split()[0]: ln.split()[-1] for ln in out.splitlines()[1:-1]}
            assert rows == {"default@dead_t": "true", "default@live_t": "true"}
            code, out = _cli(zk_server, zk_namespace, "stale")
            assert code == 0 and "0 stale explicit lock(s)" in out  # both owners live

            os.kill(driver.pid, signal.SIGKILL)
            driver.wait(10)
            # its presence goes with its ZooKeeper session (1 s timeout)
            gone = living.shared_client.ensure_started()
            assert wait_for(lambda: not gone.exists(f"/{zk_namespace}/_sparklock-owners/app-dead"))

            code, out = _cli(zk_server, zk_namespace, "locks")
            rows = {ln.split()[0]: ln.split()[-1] for ln in out.splitlines()[1:-1]}
            assert rows == {"default@dead_t": "false", "default@live_t": "true"}
            code, out = _cli(zk_server, zk_namespace, "stale")
            assert "stale explicit lock: default@dead_t EXCLUSIVE" in out
            assert "owner=gone agent=app-dead" in out and "live_t" not in out
            assert [i.name for i in living.list_locks()] == ["default@dead_t", "default@live_t"]
            code, out = _cli(zk_server, zk_namespace, "stale", "--apply")
            assert code == 0 and "removed 1 stale explicit lock(s)" in out
            assert [i.name for i in living.list_locks()] == ["default@live_t"]
            mine.release()
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(10)


#: A driver's Python process that LOCKs two tables through the lock service (what ``LOCK TABLE``
#: calls), one in a session with ``explicit.onApplicationEnd=release``, and then exits normally.
ENDING = textwrap.dedent(
    """
    import sys
    from sparklock.protocol.messages import ExplicitLockRequest, LockTarget
    from sparklock.service import get_service, sessions

    address, namespace = sys.argv[1:3]
    conf = {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": address,
        "spark.sparklock.zookeeper.namespace": namespace,
    }
    sessions.install()
    release = {**conf, "spark.sparklock.explicit.onApplicationEnd": "release"}
    for session, table, c in (("s-release", "gone_t", release), ("s-keep", "kept_t", conf)):
        get_service().lock(ExplicitLockRequest(session, c, LockTarget("default", table),
                                               "EXCLUSIVE", agent="app-ending"))
    print("locked", flush=True)
    """
)


def test_explicit_locks_go_at_the_application_end_only_when_configured(zk_server, zk_namespace):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    ended = subprocess.run(
        [sys.executable, "-c", ENDING, zk_server.address, zk_namespace],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert ended.returncode == 0 and ended.stdout.strip() == "locked", ended.stderr
    with ZooKeeperLockManager.connect(zk_server.address, zk_namespace) as m:
        assert [i.name for i in m.list_locks()] == ["default@kept_t"]  # Hive's rule: kept
        assert m.owners_alive(m.list_locks()) == [False]  # and its owner is gone


def test_a_hive_clients_explicit_lock_is_unknown_and_stale_only_by_age(zk_server, zk_namespace, zk):
    """Hive's lock data names no owner: its liveness cannot be told, so only an age finds it."""
    hour_ago = int(time.time() * 1000) - 3_600_000
    path = f"/{zk_namespace}/default/hive_t/LOCK-EXCLUSIVE-0000000000"
    zk.create(path, f"hive_q:{hour_ago}:EXPLICIT:lock table:10.0.0.7".encode(), makepath=True)
    code, out = _cli(zk_server, zk_namespace, "locks")
    assert out.splitlines()[1].split()[0] == "default@hive_t"
    assert out.splitlines()[1].split()[-1] == "unknown"
    code, out = _cli(zk_server, zk_namespace, "stale")
    assert code == 0 and "0 stale explicit lock(s)" in out
    code, out = _cli(zk_server, zk_namespace, "stale", "--older-than", "30m")
    assert "stale explicit lock: default@hive_t EXCLUSIVE" in out and "owner=unknown" in out
    code, out = _cli(zk_server, zk_namespace, "stale", "--older-than", "2h")
    assert "0 stale explicit lock(s)" in out


def test_an_owner_whose_presence_cannot_be_registered_is_unknown_never_stale(
    zk_server, zk_namespace, zk, caplog, monkeypatch
):
    """An ACL forbids the presence node: the owner's locks say nothing of its life (unknown),
    so `stale --apply` keeps them however long its node is missing; the registration fails
    at every statement but is warned about once; once it works, the next locks say so."""
    from kazoo.security import make_acl

    from sparklock.managers.zookeeper.recipe import presence

    monkeypatch.setattr(presence, "RETRY_AFTER", 0.0)  # tried again at every statement
    owners = f"/{zk_namespace}/_sparklock-owners"
    zk.ensure_path(f"/{zk_namespace}")
    zk.create(owners, b"", acl=[make_acl("world", "anyone", read=True, admin=True)])
    names = [f"default@noacl_{n}" for n in range(3)]
    with ZooKeeperLockManager.connect(zk_server.address, zk_namespace) as m:
        with caplog.at_level("DEBUG", logger="sparklock.zookeeper"):
            for n in range(3):  # three statements, one outage
                m.acquire(
                    [LockRequest(LockObject.of_table("default", f"noacl_{n}"), LockMode.EXCLUSIVE)],
                    owner="noacl-session",
                    query_id=f"noacl-{n}",
                    lock_type=LockType.EXPLICIT,
                    agent="app-noacl",
                )
        warned = [r for r in caplog.records if "could not register owner" in r.getMessage()]
        assert [r.levelname for r in warned] == ["WARNING"]
        assert len([r for r in caplog.records if "still not registered" in r.getMessage()]) == 2
        infos = m.list_locks()
        assert [i.name for i in infos] == names
        assert not any(i.data.presence for i in infos)
        assert m.owners_alive(infos) == [None, None, None]
        code, out = _cli(zk_server, zk_namespace, "stale", "--apply")
        assert code == 0 and "removed 0 stale explicit lock(s)" in out
        assert [i.name for i in m.list_locks()] == names

        zk.set_acls(owners, [make_acl("world", "anyone", all=True)])
        with caplog.at_level("INFO", logger="sparklock.zookeeper"):
            m.acquire(
                [LockRequest(LockObject.of_table("default", "noacl_3"), LockMode.EXCLUSIVE)],
                owner="noacl-session",
                query_id="noacl-3",
                lock_type=LockType.EXPLICIT,
                agent="app-noacl",
            )
        assert any("registered as alive again" in r.getMessage() for r in caplog.records)
        (later,) = [i for i in m.list_locks() if i.name == "default@noacl_3"]
        assert later.data.presence and m.owners_alive([later]) == [True]
        for obj in [*names, "default@noacl_3"]:
            m.unlock(LockObject.of_table("default", obj.split("@")[1]))
