"""``python -m sparklock`` reads catalog objects back from ZooKeeper (no Spark): ``locks`` lists
``jdb.x.t@p=1`` as SHOW LOCKS does, ``release`` takes that name, ``stale`` names it."""

from __future__ import annotations

import io
import time

import pytest

from sparklock.cli import main
from sparklock.config import LockSettings
from sparklock.locks.model import LockMode, LockRequest, LockType
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager

pytestmark = pytest.mark.zookeeper
FAST = LockSettings(num_retries=1, retry_interval=0.01)
T = LockObject.of_catalog_table("jdb", ["x"], "t")
P = LockObject.of_partition(T.database, "t", {"p": "1"})


@pytest.fixture
def manager(zk_server, zk_namespace):
    with ZooKeeperLockManager.connect(zk_server.address, zk_namespace, settings=FAST) as m:
        yield m


def run(zk_server, ns: str, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main([*args, "--quorum", zk_server.address, "--namespace", ns], out=out)
    return code, out.getvalue()


def test_locks_release_and_stale_name_catalog_objects(zk_server, zk_namespace, manager, zk):
    held = manager.acquire([LockRequest(P, LockMode.EXCLUSIVE)], owner="o", query_id="q-cat")
    manager.acquire(
        [LockRequest(T, LockMode.SHARED)], owner="a", query_id="old", lock_type=LockType.EXPLICIT
    )
    assert zk.exists(f"/{zk_namespace}/jdb./x./t/p=1")
    code, out = run(zk_server, zk_namespace, "locks")
    names = sorted(line.split()[0] for line in out.splitlines()[1:-1])
    assert code == 0 and names == ["jdb.", "jdb.x.", "jdb.x.t", "jdb.x.t", "jdb.x.t@p=1"]
    code, out = run(zk_server, zk_namespace, "locks", "--object", "jdb.x.t@p=1")
    assert out.splitlines()[-1] == "(1 lock)"
    assert {i.obj for i in manager.list_locks()} == {P, T, T.parent, T.parent.parent}
    time.sleep(1.1)
    code, out = run(zk_server, zk_namespace, "stale", "--older-than", "1s")
    assert code == 0 and "stale explicit lock: jdb.x.t SHARED" in out
    held.release()
    code, out = run(zk_server, zk_namespace, "release", "jdb.x.t")
    assert code == 0 and out.count("released SHARED EXPLICIT") == 1
    assert manager.list_locks() == []
