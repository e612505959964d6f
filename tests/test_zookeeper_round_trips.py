"""The ZooKeeper manager's request count, and that its shortcuts never cost correctness.

Once the manager knows the tree (what its own locks keep alive, what it deleted itself), a
statement locks in one multi and unlocks in one multi, after one read of its own lock nodes (an
UNLOCK may have removed them, and a node of the same name may now be another holder's: see
``test_zookeeper_unlocked_holders.py``). These tests count the
server's requests and check, with a second client meddling in between, that every wrong guess
falls back to reading and leaves exactly the tree Hive's rules give.
"""

from __future__ import annotations

import pytest

from sparklock.config import LockSettings
from sparklock.locks.model import LockMode, LockRequest, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.layout import object_path
from tests.support.zk_managers import request_counting_fixtures
from tests.support.zk_requests import counted, packets
from tests.support.zk_tree import znodes

pytestmark = pytest.mark.zookeeper

# (its manager is its own below: fail fast, and its first request is a test's to count)
server, ns, _, other = request_counting_fixtures("rt_")

S, X = LockMode.SHARED, LockMode.EXCLUSIVE
P1 = LockObject.of_partition("default", "t", {"p": "1"})
P2 = LockObject.of_partition("default", "t", {"p": "2"})
FAIL_FAST = LockSettings(num_retries=1, retry_interval=0.05, wait_policy=WaitPolicy.RETRY)


@pytest.fixture
def manager(server, ns):
    m = ZooKeeperLockManager.connect(server.address, ns, settings=FAIL_FAST)
    yield m
    m.close()


def take(m, *objs, mode=X, owner="o"):
    return m.acquire([LockRequest(o, mode) for o in objs], owner=owner, query_id="q")


def tree(client, root: str) -> list[str]:
    """Every znode below ``root``, as ``/relative/path``, sorted."""
    return sorted(p[len(root) :] for p in znodes(client, root))


def test_steady_state_is_one_multi_each_way(server, manager, other, ns):
    take(manager, P1, P2).release()  # learns the tree (reads once)
    for _ in range(3):
        held, lock_requests = counted(server.port, lambda: take(manager, P1, P2))
        _, unlock_requests = counted(server.port, held.release)
        # the release: one read (are these nodes still ours?), then one multi
        assert (lock_requests, unlock_requests) == (1, 2)
        assert tree(other, "/" + ns) == []


def test_a_node_created_by_someone_else_is_found_by_reading(server, manager, other, ns):
    root = "/" + ns
    take(manager, P1).release()  # we deleted default/: next time we would create it unread
    other.create(f"{root}/default/t/p=9", makepath=True)
    held, lock_requests = counted(server.port, lambda: take(manager, P1))
    # the guess (refused by the server), the read, the multi, and the grant check of the
    # database and table nodes (their locks are not their first children)
    assert lock_requests == 4
    assert [p.rsplit("-", 1)[0] for p in tree(other, root)] == [
        "/default",
        "/default/LOCK-SHARED",
        "/default/t",
        "/default/t/LOCK-SHARED",
        "/default/t/p=1",
        "/default/t/p=1/LOCK-EXCLUSIVE",
        "/default/t/p=9",
    ]
    held.release()
    assert tree(other, root) == ["/default", "/default/t", "/default/t/p=9"]
    other.delete(f"{root}/default", recursive=True)
    take(manager, P1).release()  # reads again (nothing known), creates, deletes
    assert tree(other, root) == []


def test_someone_else_below_a_fresh_node_keeps_it(server, manager, other, ns):
    root = "/" + ns
    held = take(manager, P1)  # creates default/, t/ and p=1/ itself
    other.create(f"{root}/default/t/p=7/LOCK-SHARED-", b"hive", sequence=True, makepath=True)
    _, unlock_requests = counted(server.port, held.release)
    # whose nodes (one read), the multi without reading the tree (refused: t/ is not empty), the
    # read of the tree, the multi
    assert unlock_requests == 4
    assert [p for p in tree(other, root) if "LOCK" not in p] == [
        "/default",
        "/default/t",
        "/default/t/p=7",
    ]
    assert not any("p=1" in p for p in tree(other, root))


@pytest.mark.parametrize("first", ["a", "b"])
def test_overlapping_statements_of_one_process_leave_nothing(manager, other, ns, first):
    a = take(manager, P1, mode=S, owner="a")
    b = take(manager, P1, P2, mode=S, owner="b")
    held = {"a": a, "b": b}
    held[first].release()
    assert tree(other, "/" + ns) != []
    held["b" if first == "a" else "a"].release()
    assert tree(other, "/" + ns) == []
    c = take(manager, P2, owner="c")  # the hints stay right after both orders
    assert any("p=2/LOCK-EXCLUSIVE" in p for p in tree(other, "/" + ns))
    c.release()
    assert tree(other, "/" + ns) == []


def test_create_maps_nodes_to_requests_in_any_order(manager, other, ns):
    from sparklock.locks.model import LockData, LockType, build_lock_set

    lock_set = build_lock_set([LockRequest(P1, X), LockRequest(P2, S)])
    data = LockData.now("q", LockType.IMPLICIT, "text")
    requests = list(reversed(list(enumerate(lock_set))))  # children before parents
    nodes = manager._steps.create(requests, data, "o")
    for node in nodes:
        assert node.object_path == object_path("/" + ns, node.request.obj)
        assert node.path.rsplit("/", 1)[1].startswith(f"LOCK-{node.request.mode.value}-")
    manager._steps.drop(nodes)
    assert tree(other, "/" + ns) == []


def test_write_multi_speaks_kazoos_transaction():
    from kazoo.protocol.serialization import (
        Create,
        Delete,
        Transaction,
        int_struct,
        multiheader_struct,
    )
    from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

    from sparklock.managers.zookeeper.wire.multi import WriteMulti

    ops = [
        Create("/a/b", b"", OPEN_ACL_UNSAFE, 0),
        Create("/a/b/LOCK-SHARED-", b"q:1:IMPLICIT:x:10.0.0.1", OPEN_ACL_UNSAFE, 3),
        Delete("/a/p=\u00e9", -1),
        Create("/x", b"d", [make_digest_acl("u", "p", all=True)], 1),
    ]
    assert WriteMulti(ops).serialize() == bytes(Transaction(ops).serialize())

    def string(text: str) -> bytes:
        raw = text.encode()
        return int_struct.pack(len(raw)) + raw

    answer = b"".join(
        [
            multiheader_struct.pack(1, False, 0) + string("/a/b/LOCK-SHARED-0000000001"),
            multiheader_struct.pack(2, False, 0),
            multiheader_struct.pack(-1, False, -101) + int_struct.pack(-101),
            multiheader_struct.pack(-1, True, -1),
        ]
    )

    def shown(results):
        return [type(r).__name__ if isinstance(r, Exception) else r for r in results]

    assert shown(WriteMulti.deserialize(answer, 0)) == shown(Transaction.deserialize(answer, 0))


def test_threads_of_one_process_do_not_delete_nodes_under_each_other(server, manager, other, ns):
    """Threads on their own tables share the database node: a release must not delete it while
    another thread is about to lock below it (they would re-create it against each other)."""
    import threading

    threads, cycles = 16, 25
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def work(t: int) -> None:
        obj = LockObject.of_partition("default", f"d{t}", {"p": "1"})
        start.wait()
        try:
            for _ in range(cycles):
                take(manager, obj, mode=S, owner=f"t{t}").release()
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    before = packets(server.port)
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    per_cycle = (packets(server.port) - before) / (threads * cycles)
    assert not errors
    assert tree(other, "/" + ns) == []
    assert per_cycle < 6, f"{per_cycle:.1f} requests per lock+unlock cycle"
