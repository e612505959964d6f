"""A statement whose locks someone else removed (``UNLOCK TABLE``, Hive's or ours, removes every
lock on the table, whoever holds it) against a real ZooKeeper server.

After such an UNLOCK the object node is left empty and deleted; the next lock below the
re-created node starts the sequence numbers over, so it can carry the very name the running
statement's lock had. The statement's release must then leave that other lock alone (deleting it
would let a conflicting lock in beside its holder), clean up what the UNLOCK left empty, and say
(a WARNING) that the statement ran unprotected.
"""

from __future__ import annotations

import pytest

from sparklock.config import LockSettings
from sparklock.errors import LockConflictError
from sparklock.locks.model import LockMode, LockRequest, LockType, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from tests.support.locks import take

pytestmark = pytest.mark.zookeeper

S, X = LockMode.SHARED, LockMode.EXCLUSIVE
T = LockObject.of_table("default", "t")
FAIL_FAST = LockSettings(num_retries=1, retry_interval=0.05, wait_policy=WaitPolicy.RETRY)
QUEUE = LockSettings(num_retries=100, retry_interval=0.05, wait_policy=WaitPolicy.QUEUE)


@pytest.fixture
def make(zk_server, zk_namespace):
    """Managers on the session's server, in this test's namespace; closed after the test."""
    made: list[ZooKeeperLockManager] = []

    def factory(settings: LockSettings = FAIL_FAST) -> ZooKeeperLockManager:
        m = ZooKeeperLockManager.connect(zk_server.address, zk_namespace, settings=settings)
        made.append(m)
        return m

    yield factory
    for m in made:
        m.close()


def table_locks(zk, ns: str) -> list[str]:
    path = f"/{ns}/default/t"
    return sorted(f"{path}/{c}" for c in zk.get_children(path)) if zk.exists(path) else []


def test_a_release_after_an_unlock_of_this_process_spares_the_next_holder(
    make, zk, zk_namespace, caplog
):
    """UNLOCK by another session of the same driver (one ZooKeeper client for all of them)."""
    m = make()
    running = take(m, T, S, "a", "qa")  # a statement's implicit set
    (mine,) = [i.lock_id for i in running.locks if i.obj == T]
    m.unlock(T)  # another session: every lock on t goes, then the empty node t
    assert not zk.exists(f"/{zk_namespace}/default/t")
    after = take(m, T, S, "c", "qc")  # the node t again: numbers start over
    (theirs,) = [i.lock_id for i in after.locks if i.obj == T]
    assert theirs == mine  # the same name, another holder's lock
    running.release()
    assert table_locks(zk, zk_namespace) == [theirs]  # still protects c's statement
    with pytest.raises(LockConflictError):
        take(m, T, X, "d", "qd")
    assert "1 of the 2 lock(s) of query qa were removed by someone else" in caplog.text
    assert not after.lost
    after.release()
    assert table_locks(zk, zk_namespace) == []


@pytest.mark.parametrize("settings", [FAIL_FAST, QUEUE], ids=["retry", "queue"])
def test_a_release_after_another_clients_unlock_spares_the_next_holder(
    make, zk, zk_namespace, settings
):
    """UNLOCK by another process (Hive's, another driver's): a raw client deletes the nodes."""
    m = make(settings)
    running = take(m, T, S, "a", "qa")
    (mine,) = [i.lock_id for i in running.locks if i.obj == T]
    zk.delete(mine)  # Hive's UNLOCK: the lock, then the node left empty
    zk.delete(f"/{zk_namespace}/default/t")
    after = take(m, T, S, "c", "qc")
    (theirs,) = [i.lock_id for i in after.locks if i.obj == T]
    assert theirs == mine
    running.release()
    assert table_locks(zk, zk_namespace) == [theirs]
    assert not after.lost
    after.release()
    assert table_locks(zk, zk_namespace) == []


def test_an_explicit_lock_removed_by_unlock_spares_the_next_holder(make, zk, zk_namespace):
    """LOCK TABLE's persistent nodes: the same, as before (UNLOCK answers for them)."""
    m = make()
    pinned = take(m, T, S, "a", "qa", lock_type=LockType.EXPLICIT)
    m.unlock(T)
    after = take(m, T, S, "c", "qc")
    assert [i.lock_id for i in after.locks if i.obj == T] == [pinned.locks[0].lock_id]
    pinned.release()
    assert len(table_locks(zk, zk_namespace)) == 1
    after.release()


def test_the_nodes_an_unlock_left_empty_are_cleaned_up(make, zk, zk_namespace):
    """The statement's other locks go as usual, and the object nodes above the removed one too."""
    m = make()
    p1 = LockObject.of_partition("default", "t", {"p": "1"})
    running = m.acquire(
        [LockRequest(o, S) for o in (LockObject.of_database("default"), T)] + [LockRequest(p1, X)],
        owner="a",
        query_id="qa",
    )
    m.unlock(T)  # t keeps its child p=1: t stays
    running.release()
    assert zk.get_children("/" + zk_namespace) == []
