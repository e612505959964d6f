"""A writer's release trusts the watches its write guards already carry (they are there to fence
it when someone else UNLOCKs it, set by one ``setWatches`` from the zxid the nodes were created
at) instead of reading those nodes back, against a real ZooKeeper server.

The watches must say exactly what the read would: a node someone removed is not deleted again
(a re-created object node restarts the names, so the path may be another holder's lock now), a
node someone wrote into is read back, and whatever no watch vouches for (a reader's locks) is
read. The request counts show what the watches save.
"""

from __future__ import annotations

import socket
import threading

import pytest
from kazoo.protocol.states import Callback

from sparklock.config import LockSettings
from sparklock.locks.model import LockMode, LockRequest, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.removals import REMOVED, WATCHED
from tests.support.locks import wait_for
from tests.support.zk_managers import request_counting_fixtures
from tests.support.zk_requests import counted

pytestmark = pytest.mark.zookeeper

server, ns, _, other = request_counting_fixtures("rw_")

S, X = LockMode.SHARED, LockMode.EXCLUSIVE
T = LockObject.of_table("default", "t")
U = LockObject.of_table("default", "u")
P1 = LockObject.of_partition("default", "t", {"p": "1"})
#: Partitions of one write: lock nodes in several create multis (``MULTI_BYTES`` each).
WIDE_WRITE = 3000
FAIL_FAST = LockSettings(num_retries=1, retry_interval=0.05, wait_policy=WaitPolicy.RETRY)


@pytest.fixture
def removed():
    """What the manager reported removed by someone else: ``(query_id, lock ids)``."""
    return []


@pytest.fixture
def manager(server, ns, removed):
    """A connected manager with a removal listener, as a Spark session's coordinator sets one."""
    m = ZooKeeperLockManager.connect(server.address, ns, settings=FAIL_FAST)
    m.list_locks()  # connected, multiRead known: its first request is not the test's to count
    m.watch_removals(lambda held, ids: removed.append((held.query_id, sorted(ids))))
    yield m
    m.close()


def take(m, *requests, owner="o", query_id="q"):
    return m.acquire([LockRequest(o, mode) for o, mode in requests], owner=owner, query_id=query_id)


def watched(m: ZooKeeperLockManager, held, paths) -> bool:
    """Every one of ``paths`` of ``held`` has its watch set (its answer handled)."""
    with m._removals._guard:
        return all(m._removals._state(held, p) == WATCHED for p in paths)


def table_locks(client, namespace: str) -> list[str]:
    path = f"/{namespace}/default/t"
    return sorted(f"{path}/{c}" for c in client.get_children(path)) if client.exists(path) else []


def test_a_writer_releases_in_one_request_a_reader_in_two(server, manager, other, ns):
    """A partition INSERT's three nodes are all write guards: no read back. A SELECT's are not
    watched: read back, then deleted."""
    take(manager, (P1, X)).release()  # learns the tree
    for _ in range(2):
        writer = take(manager, (P1, X))
        assert wait_for(lambda w=writer: watched(manager, w, [i.lock_id for i in w.locks]))
        _, writer_release = counted(server.port, writer.release)
        reader = take(manager, (P1, S))
        _, reader_release = counted(server.port, reader.release)
        assert (writer_release, reader_release) == (1, 2)
    assert other.get_children("/" + ns) == []


def test_a_writers_guards_are_watched_by_one_request(server, manager, other, ns):
    """The grant and the watches on its write guards, however many: the create, then one
    ``setWatches`` from the zxid the nodes were created at (not a read per node)."""
    take(manager, (P1, X)).release()  # learns the tree
    for objects in ([(P1, X)], [(P1, X), (U, X)]):

        def granted_and_watched(objects=objects):
            held = take(manager, *objects)
            assert wait_for(lambda: watched(manager, held, [i.lock_id for i in held.locks]))
            return held

        held, requests = counted(server.port, granted_and_watched)
        assert requests == 2, objects
        held.release()
    assert other.get_children("/" + ns) == []


def test_a_guard_gone_or_replaced_before_its_watch_is_reported(manager, other, ns, removed):
    """Between the create and the ``setWatches``: a node deleted is reported at once, and a node
    of the same name created since (an UNLOCK, its object node re-created) is read again and
    found to be someone else's: reported, and left alone by the release."""
    removals = manager._removals
    hold = threading.Event()
    ask_all = removals._ask_all

    def held_back(batches):
        hold.wait(10)
        ask_all(batches)

    removals._ask_all = held_back
    try:
        gone = take(manager, (U, X), query_id="qu")
        replaced = take(manager, (T, X), query_id="qt")
        (u,) = [i.lock_id for i in gone.locks if i.obj == U]
        (t,) = [i.lock_id for i in replaced.locks if i.obj == T]
        other.delete(u)
        other.delete(t)
        other.delete(f"/{ns}/default/t")
        other.create(t, b"someone else's", makepath=True)  # the same name, created later
    finally:
        hold.set()
    assert wait_for(lambda: sorted(removed) == [("qt", [t]), ("qu", [u])])
    replaced.release()
    gone.release()
    assert table_locks(other, ns) == [t]
    other.delete(t)


def test_a_wide_writer_is_watched_by_a_request_per_create_multi(server, manager, other, ns):
    """3,000 partitions written (several create multis): one ``setWatches`` per multi (the
    zxid its nodes were created at), no read per node; the release reads nothing back."""
    removals = manager._removals
    sent: list[int] = []
    one_by_one: list[str] = []
    many, ask = removals._ask_many, removals._ask

    def counting_many(held, zxid, paths, data):
        sent.append(len(paths))
        return many(held, zxid, paths, data)

    def counting_one(held, path, data):
        one_by_one.append(path)
        return ask(held, path, data)

    removals._ask_many, removals._ask = counting_many, counting_one
    parts = [LockObject.of_partition("default", "t", {"p": f"{i:05d}"}) for i in range(WIDE_WRITE)]
    held = take(manager, *[(p, X) for p in parts])
    ids = [i.lock_id for i in held.locks]
    assert wait_for(lambda: watched(manager, held, ids), timeout=30)
    assert one_by_one == []
    # every guard, by a request per create multi (each about a hundred nodes with their data)
    assert sum(sent) == len(ids) and 2 <= len(sent) <= len(ids) // 50
    _, release = counted(server.port, held.release)
    assert release <= len(sent) + 3  # the deletes' multis (smaller than the creates'): no read
    assert other.get_children("/" + ns) == []


def test_what_a_writer_only_reads_rides_on_its_guards_watches(server, manager, other, ns):
    """INSERT INTO t SELECT FROM u: u's lock is no write guard, but the create multi that made
    the guards made it too: the same ``setWatches`` watches it (grant and watches still 2
    requests), so the release reads nothing back and deletes everything in one request."""
    take(manager, (T, X), (U, S)).release()  # learns the tree

    def granted_and_watched():
        held = take(manager, (T, X), (U, S))
        assert wait_for(lambda: watched(manager, held, [i.lock_id for i in held.locks]))
        return held

    held, requests = counted(server.port, granted_and_watched)
    assert requests == 2
    _, release = counted(server.port, held.release)
    assert release == 1
    assert other.get_children("/" + ns) == []
    assert manager._removals._nodes == {}  # nothing kept of a released set


@pytest.fixture
def driver_b(server, ns):
    """A second driver: its own ZooKeeper session, the same namespace."""
    with ZooKeeperLockManager.connect(server.address, ns, settings=FAIL_FAST) as m:
        yield m


@pytest.mark.parametrize("unlocker", ["this process", "another client"])
def test_a_watched_writer_spares_the_next_holder_of_its_name(
    manager, driver_b, other, ns, removed, unlocker
):
    """Its EXCLUSIVE node removed, the object node deleted and re-created, and another driver's
    writer holding a node of the very same name: the release leaves that one alone."""
    running = take(manager, (T, X), query_id="qa")
    (mine,) = [i.lock_id for i in running.locks if i.obj == T]
    assert wait_for(lambda: watched(manager, running, [mine]))
    if unlocker == "this process":
        manager.unlock(T)  # fences the statement itself; its watch reports nothing
    else:
        other.delete(mine)  # Hive's UNLOCK: the lock, then the node left empty
        other.delete(f"/{ns}/default/t")
        assert wait_for(lambda: removed == [("qa", [mine])])  # the statement is told
    assert not other.exists(f"/{ns}/default/t")
    after = take(driver_b, (T, X), owner="c", query_id="qc")
    (theirs,) = [i.lock_id for i in after.locks if i.obj == T]
    assert theirs == mine  # the same name, another holder's lock
    running.release()
    assert table_locks(other, ns) == [theirs]  # still protects c's statement
    assert not after.lost
    after.release()
    assert table_locks(other, ns) == []
    assert removed == ([] if unlocker == "this process" else [("qa", [mine])])


def test_a_read_only_lock_removed_is_not_reported_and_its_name_is_spared(
    manager, driver_b, other, ns, removed
):
    """An UNLOCK of what a writer only reads leaves it running, as under Hive: nothing is
    reported. Its watch still tells the release the node is gone, so a lock of the same name
    taken since (the object node re-created) is left to its holder."""
    running = take(manager, (T, X), (U, S), query_id="qa")
    (mine,) = [i.lock_id for i in running.locks if i.obj == U]
    assert wait_for(lambda: watched(manager, running, [i.lock_id for i in running.locks]))
    other.delete(mine)
    other.delete(f"/{ns}/default/u")
    assert wait_for(lambda: manager._removals._state(running, mine) == REMOVED)
    after = take(driver_b, (U, S), owner="c", query_id="qc")
    (theirs,) = [i.lock_id for i in after.locks if i.obj == U]
    assert theirs == mine  # the same name, another holder's lock
    running.release()
    assert sorted(other.get_children(f"/{ns}/default/u")) == [theirs.rsplit("/", 1)[1]]
    assert removed == []
    after.release()


def test_an_event_read_but_not_handled_yet_is_read_back(manager, driver_b, other, ns):
    """kazoo's callback thread busy: the writer's node removed and its name taken by another
    driver's lock. kazoo has read the event (its watcher is out of the table) but not handed it
    on when the release comes: the release reads the node back instead of trusting the watch,
    and leaves the other driver's lock alone."""
    running = take(manager, (T, X), query_id="qa")
    (mine,) = [i.lock_id for i in running.locks if i.obj == T]
    assert wait_for(lambda: watched(manager, running, [mine]))
    client = manager.transport.client()
    busy, free = threading.Event(), threading.Event()
    client.handler.dispatch_callback(Callback("watch", lambda: (busy.set(), free.wait(20)), ()))
    try:
        assert busy.wait(5)
        other.delete(mine)
        other.delete(f"/{ns}/default/t")
        assert wait_for(lambda: not client._data_watchers.get((client.chroot or "") + mine))
        after = take(driver_b, (T, X), owner="c", query_id="qc")
        (theirs,) = [i.lock_id for i in after.locks if i.obj == T]
        assert theirs == mine  # the same name, another driver's lock
        assert watched(manager, running, [mine])  # the event is not handled yet
        running.release()
        assert table_locks(other, ns) == [theirs]
    finally:
        free.set()
    after.release()


def test_a_node_someone_wrote_into_is_no_longer_ours(manager, other, ns, removed):
    """Data written into a writer's node (no lock of sparklock's changes like that): the watch
    reads the node again, finds someone else's data, and counts the lock as removed: the
    statement is told and its release leaves the node alone, as a read before the delete
    would."""
    running = take(manager, (T, X), query_id="qa")
    (mine,) = [i.lock_id for i in running.locks if i.obj == T]
    assert wait_for(lambda: watched(manager, running, [mine]))
    other.set(mine, b"someone else's")
    assert wait_for(lambda: removed == [("qa", [mine])])
    running.release()
    assert table_locks(other, ns) == [mine]
    other.delete(mine)


def test_a_dropped_connection_sets_the_watches_again(manager, driver_b, other, ns, removed):
    """kazoo forgets every watch when its connection drops: they are set again once it is back,
    so a removal meanwhile is still reported, and the release still trusts nothing stale."""
    running = take(manager, (T, X), query_id="qa")
    (mine,) = [i.lock_id for i in running.locks if i.obj == T]
    assert wait_for(lambda: watched(manager, running, [mine]))
    client = manager.transport.client()
    client._connection._socket.shutdown(socket.SHUT_RDWR)  # the link drops; the session lives
    assert wait_for(lambda: not client.connected, timeout=5)
    other.delete(mine)  # meanwhile, another client's UNLOCK
    other.delete(f"/{ns}/default/t")
    assert wait_for(lambda: client.connected, timeout=15)
    assert wait_for(lambda: removed == [("qa", [mine])], timeout=10)
    after = take(driver_b, (T, X), owner="c", query_id="qc")
    (theirs,) = [i.lock_id for i in after.locks if i.obj == T]
    assert theirs == mine  # the same name, another driver's lock
    running.release()
    assert table_locks(other, ns) == [theirs]
    after.release()


def test_watch_answers_and_own_deletes_stay_off_kazoos_callback_threads(manager, other, ns):
    """The thread that sets the watches takes their answers, a released writer's own deletes
    reach no watcher, and the release asks its watches without waiting on kazoo's callback
    thread: nothing at all is handed to kazoo's callback threads."""
    removals = manager._removals
    handed: list[tuple[str, str]] = []
    dispatch = manager.transport.client().handler.dispatch_callback
    original = dispatch.__func__

    def counting(handler, callback):
        handed.append((callback.type, getattr(callback.func, "func", callback.func).__name__))
        return original(handler, callback)

    client = manager.transport.client()
    client.handler.dispatch_callback = counting.__get__(client.handler)
    try:
        for _ in range(3):
            writer = take(manager, (P1, X))
            guards = [i.lock_id for i in writer.locks]
            assert wait_for(lambda w=writer, g=guards: watched(manager, w, g))
            writer.release()
        assert wait_for(lambda: not other.exists(f"/{ns}/default/t/p=1"))
    finally:
        del client.handler.dispatch_callback
    assert handed == []
    with removals._guard:
        assert removals._watchers == {}  # nothing kept of released sets
    assert other.get_children("/" + ns) == []
