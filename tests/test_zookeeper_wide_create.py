"""A lock set too big for one multi: its multis are all sent before any answer is read, each is
answered by its own outcome, and one that fails leaves nothing of the others behind."""

from __future__ import annotations

import pytest
from kazoo.exceptions import NodeExistsError

from sparklock.config import LockSettings
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.transport import children_of, create, multi_failure
from sparklock.managers.zookeeper.tree_hints import ABSENT_HINTS
from sparklock.model import LockMode, LockRequest
from sparklock.objects import LockObject
from tests.support.zk_tree import inspecting, znodes
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper

#: Enough partitions for about ten multis (MULTI_BYTES each), few enough that this process
#: remembers every node it deleted (``tree_hints.ABSENT_HINTS``) and creates them unread.
PARTITIONS = 1000


@pytest.fixture(scope="module")
def server():
    with ZooKeeperServer() as zk:
        yield zk


@pytest.fixture
def ns(request) -> str:
    return "wide_create_" + request.node.name


@pytest.fixture
def manager(server, ns):
    m = ZooKeeperLockManager.connect(server.address, ns, settings=LockSettings())
    m.list_locks()
    yield m
    m.close()


@pytest.fixture
def other(server):
    with inspecting(server.address) as client:
        yield client


def partition(i: int) -> LockObject:
    return LockObject.of_partition("warehouse_db", "events_by_day", {"ds": f"2026-01-{i:05d}"})


def full_read() -> list[LockRequest]:
    return [LockRequest(partition(i), LockMode.SHARED) for i in range(PARTITIONS)]


def test_each_batch_is_answered_by_its_own_outcome(manager, other, ns):
    """The middle multi fails (its node exists); the ones after it were sent with it and went
    through, and the reads behind each multi see what it wrote."""
    root = f"/{ns}"
    other.ensure_path(root)
    other.create(f"{root}/taken", b"")
    batches = [
        ([create(f"{root}/a", b"1")], 100),
        ([create(f"{root}/b", b"2"), create(f"{root}/taken", b"3")], 200),
        ([create(f"{root}/c", b"4")], 100),
    ]
    reads = [[children_of(root)], [], [children_of(root)]]
    outcomes, answers = manager.transport.commit_batches(batches, "test", reads)
    assert outcomes[0] == [f"{root}/a"]
    assert isinstance(multi_failure(outcomes[1]), NodeExistsError)
    assert outcomes[2] == [f"{root}/c"]
    assert sorted(other.get_children(root)) == ["a", "c", "taken"]  # b rolled back with taken
    assert sorted(answers[0][0]) == ["a", "taken"]
    assert sorted(answers[2][0]) == ["a", "c", "taken"]


def test_a_batch_that_races_in_the_middle_leaves_nothing_behind(manager, other, ns):
    """This process last saw the partitions' nodes deleted, so it creates them without reading;
    someone else made the middle one meanwhile. That multi fails, the others go through and are
    taken back, and the set is created again: one lock node per partition, none left over."""
    assert PARTITIONS <= ABSENT_HINTS  # else the second set reads the tree: no race
    table = f"/{ns}/warehouse_db/events_by_day"
    keeper = manager.acquire(
        [LockRequest(LockObject.of_table("warehouse_db", "events_by_day"), LockMode.SHARED)],
        owner="keeper",
        query_id="k",
    )
    manager.acquire(full_read(), owner="a", query_id="q1").release()  # nodes gone, as known here
    assert sorted(other.get_children(table)) == [
        p.rsplit("/", 1)[1] for p in (i.lock_id for i in keeper.locks) if p.startswith(table)
    ]
    middle = f"{table}/ds=2026-01-{PARTITIONS // 2:05d}"
    other.create(middle, b"")

    held = manager.acquire(full_read(), owner="a", query_id="q2")
    locks = znodes(other, f"/{ns}", locks_only=True)
    mine = sorted(i.lock_id for i in held.locks if i.lock_id.startswith(table + "/ds="))
    assert sorted(p for p in locks if p.startswith(table + "/ds=")) == mine
    assert len({p.rsplit("/", 1)[0] for p in mine}) == PARTITIONS  # one per partition
    assert other.get_children(middle) == [mine[PARTITIONS // 2].rsplit("/", 1)[1]]

    held.release()
    keeper.release()
    assert list(znodes(other, f"/{ns}")) == []
