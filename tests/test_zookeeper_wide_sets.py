"""A lock set too big for one multi. Its multis are all sent before any answer is read, each is
answered by its own outcome, and one that fails leaves nothing of the others behind. Releasing it
costs a handful of requests, whoever else holds locks on the same objects, and leaves exactly
Hive's tree (empty object nodes gone, the others kept)."""

from __future__ import annotations

import math

import pytest
from kazoo.exceptions import NodeExistsError

from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.recipe.tree_hints import ABSENT_HINTS
from sparklock.managers.zookeeper.wire.ops import (
    MULTI_BYTES,
    MULTI_READ_OPS,
    children_of,
    create,
    multi_failure,
)
from tests.support.zk_managers import request_counting_fixtures
from tests.support.zk_requests import counted
from tests.support.zk_tree import znodes

pytestmark = pytest.mark.zookeeper

server, ns, manager, other = request_counting_fixtures("wide_")

#: Enough partitions that the lock nodes and their object nodes exceed one multi (MULTI_BYTES).
PARTITIONS = 3000
#: Enough partitions for about ten multis, few enough that this process remembers every node it
#: deleted (``tree_hints.ABSENT_HINTS``) and creates them unread.
CREATED_UNREAD = 1000


def most_requests(held) -> int:
    """At most: the lock nodes' multis, a batched read of 1,000 nodes a request, the object
    nodes' multis (each by what its deletes weigh, ``op_bytes``), and a request of slack per
    step: a handful, however many other holders there are."""
    locks = [i.lock_id for i in held.locks]
    objects = {p.rsplit("/", 1)[0] for p in locks}

    def multis(paths) -> int:
        return math.ceil(sum(64 + len(p) for p in paths) / MULTI_BYTES)

    return multis(locks) + math.ceil(len(objects) / MULTI_READ_OPS) + multis(objects) + 3


def full_read(partitions: int = PARTITIONS) -> list[LockRequest]:
    return [
        LockRequest(
            LockObject.of_partition("warehouse_db", "events_by_day", {"ds": f"2026-01-{i:05d}"}),
            LockMode.SHARED,
        )
        for i in range(partitions)
    ]


def released(server, held) -> int:
    """The requests releasing ``held`` costs, checked against ``most_requests``."""
    most = most_requests(held)
    spent = counted(server.port, held.release)[1]
    assert spent <= most
    return spent


def test_alone(server, manager, other, ns):
    held = manager.acquire(full_read(), owner="a", query_id="q")
    released(server, held)
    assert list(znodes(other, f"/{ns}")) == []


def assert_released_beside(keeper_side, server, manager, other, ns) -> None:
    """Release a wide read while ``keeper_side`` holds the same read: cheap, the keeper's lock
    nodes all left, and nothing left once the keeper releases too."""
    keeper = keeper_side.acquire(full_read(), owner="keeper", query_id="k")
    held = manager.acquire(full_read(), owner="a", query_id="q")
    released(server, held)
    locks = list(znodes(other, f"/{ns}", locks_only=True))
    assert sorted(locks) == sorted(i.lock_id for i in keeper.locks)
    keeper.release()
    assert list(znodes(other, f"/{ns}")) == []


def test_beside_a_reader_of_the_same_process(server, manager, other, ns):
    assert_released_beside(manager, server, manager, other, ns)


def test_beside_a_reader_elsewhere(server, manager, other, ns):
    # a client of its own (another connection string): another process as far as we know
    elsewhere = ZooKeeperLockManager.connect(f"localhost:{server.port}", ns)
    try:
        assert_released_beside(elsewhere, server, manager, other, ns)
    finally:
        elsewhere.close()


def test_a_node_someone_added_below_is_kept(server, manager, other, ns):
    held = manager.acquire(full_read(), owner="a", query_id="q")
    table = f"/{ns}/warehouse_db/events_by_day"
    other.create(f"{table}/ds=2026-01-00007/LOCK-SHARED-", b"hive", sequence=True)
    held.release()
    left = sorted(p for p in znodes(other, f"/{ns}") if "LOCK" not in p)
    assert left == [f"/{ns}/warehouse_db", table, f"{table}/ds=2026-01-00007"]


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
    assert CREATED_UNREAD <= ABSENT_HINTS  # else the second set reads the tree: no race
    table = f"/{ns}/warehouse_db/events_by_day"
    keeper = manager.acquire(
        [LockRequest(LockObject.of_table("warehouse_db", "events_by_day"), LockMode.SHARED)],
        owner="keeper",
        query_id="k",
    )
    # its partitions' nodes deleted, as this process knows
    manager.acquire(full_read(CREATED_UNREAD), owner="a", query_id="q1").release()
    assert sorted(other.get_children(table)) == [
        p.rsplit("/", 1)[1] for p in (i.lock_id for i in keeper.locks) if p.startswith(table)
    ]
    middle = f"{table}/ds=2026-01-{CREATED_UNREAD // 2:05d}"
    other.create(middle, b"")

    held = manager.acquire(full_read(CREATED_UNREAD), owner="a", query_id="q2")
    locks = znodes(other, f"/{ns}", locks_only=True)
    mine = sorted(i.lock_id for i in held.locks if i.lock_id.startswith(table + "/ds="))
    assert sorted(p for p in locks if p.startswith(table + "/ds=")) == mine
    assert len({p.rsplit("/", 1)[0] for p in mine}) == CREATED_UNREAD  # one per partition
    assert other.get_children(middle) == [mine[CREATED_UNREAD // 2].rsplit("/", 1)[1]]

    held.release()
    keeper.release()
    assert list(znodes(other, f"/{ns}")) == []
