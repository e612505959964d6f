"""Many threads, one connection: merged requests answer each thread as its own request would.

The lanes of :mod:`sparklock.managers.zookeeper.wire.coalescing` merge what threads ask
meanwhile into one ``multiRead`` or one write ``multi``. These tests hold the lane's in-flight
slots so that the threads' requests wait in line and leave together, count the server's requests,
and check each thread's answer — including a merged multi that fails because of one member only.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time

import pytest
from kazoo.exceptions import NoNodeError

from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.wire import coalescing
from sparklock.managers.zookeeper.wire.ops import children_of, create, multi_failure
from sparklock.managers.zookeeper.wire.polling import PollingHandler
from tests.support.zk_managers import request_counting_fixtures
from tests.support.zk_requests import packets
from tests.support.zk_tree import znodes
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper

server, ns, manager, other = request_counting_fixtures("co_")

THREADS = 6


@contextlib.contextmanager
def lined_up(lane: coalescing.Lane, waiting: int):
    """Every in-flight slot of ``lane`` taken until ``waiting`` requests wait in line; leaving
    frees the slots, which sends the line as one request."""
    with lane._lock:
        lane._in_flight += coalescing.DEPTH
    try:
        yield
        deadline = time.monotonic() + 10
        while len(lane._line) < waiting and time.monotonic() < deadline:
            time.sleep(0.005)
        assert len(lane._line) == waiting
    finally:
        for _ in range(coalescing.DEPTH):
            lane._answered([], [], None)  # a slot's answer: frees it and sends what waits


def in_threads(calls) -> list:
    """Run each call in a thread of its own; their results (or exceptions), in order."""
    results: list = [None] * len(calls)

    def run(k: int) -> None:
        try:
            results[k] = calls[k]()
        except BaseException as exc:  # handed back to the test
            results[k] = exc

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
    for t in threads:
        t.start()
    return threads, results


def test_writes_waiting_meanwhile_leave_as_one_multi(server, manager, other, ns):
    transport = manager.transport
    root = f"/{ns}"
    other.ensure_path(root)
    calls = [
        lambda k=k: transport.commit([create(f"{root}/n{k}", b"x")], "test") for k in range(THREADS)
    ]
    before = packets(server.port)
    with lined_up(transport.lanes.writes, THREADS):
        threads, results = in_threads(calls)
    for t in threads:
        t.join(30)
    assert packets(server.port) - before - 1 == 1  # one multi (the probe itself is one packet)
    assert results == [[f"{root}/n{k}"] for k in range(THREADS)]
    assert sorted(other.get_children(root)) == [f"n{k}" for k in range(THREADS)]


def test_a_failed_merged_multi_answers_each_by_its_own_outcome(server, manager, other, ns):
    transport = manager.transport
    root = f"/{ns}"
    other.ensure_path(root)
    paths = [f"{root}/a", f"{root}/missing/b", f"{root}/c"]
    calls = [lambda p=p: transport.commit([create(p, b"x")], "test") for p in paths]
    before = packets(server.port)
    with lined_up(transport.lanes.writes, len(paths)):
        threads, results = in_threads(calls)
    for t in threads:
        t.join(30)
    # the merged multi fails on b; each is sent again alone
    assert packets(server.port) - before - 1 == 1 + len(paths)
    assert results[0] == [paths[0]] and results[2] == [paths[2]]
    assert isinstance(multi_failure(results[1]), NoNodeError)
    assert sorted(other.get_children(root)) == ["a", "c"]


def test_reads_waiting_meanwhile_leave_as_one_multi_read(server, manager, other, ns):
    transport = manager.transport
    root = f"/{ns}"
    for k in range(THREADS):
        other.ensure_path(f"{root}/r{k}")
        for j in range(k):
            other.ensure_path(f"{root}/r{k}/c{j}")
    calls = [
        lambda k=k: transport.read([children_of(f"{root}/r{k}"), children_of(f"{root}/none")], "t")
        for k in range(THREADS)
    ]
    before = packets(server.port)
    with lined_up(transport.lanes.reads, THREADS):
        threads, results = in_threads(calls)
    for t in threads:
        t.join(30)
    assert packets(server.port) - before - 1 == 1
    for k, (children, missing) in enumerate(results):
        assert sorted(children) == [f"c{j}" for j in range(k)]
        assert isinstance(missing, NoNodeError)


def test_many_threads_on_one_connection_exclude_each_other(server, manager, other, ns):
    """EXCLUSIVE cycles of 8 threads on one partition (merged creates, checks and deletes):
    never two inside at once, fewer requests than the threads asked, nothing left."""
    partition = LockObject.of_partition("db", "t", {"p": "1"})
    inside, most, cycles = [0], [0], 15
    guard = threading.Lock()
    barrier = threading.Barrier(8)

    def work(t: int) -> None:
        barrier.wait()
        for i in range(cycles):
            held = manager.acquire(
                [LockRequest(partition, LockMode.EXCLUSIVE)], owner=f"t{t}", query_id=f"q{t}_{i}"
            )
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.001)
            with guard:
                inside[0] -= 1
            held.release()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert most[0] == 1
    assert [p for p in znodes(other, f"/{ns}")] == []


def test_shared_cycles_of_many_threads_are_merged(server, manager, other, ns):
    partition = LockObject.of_partition("db", "t", {"p": "1"})
    threads_n, cycles = 16, 20
    barrier = threading.Barrier(threads_n)

    def work(t: int) -> None:
        barrier.wait()
        for i in range(cycles):
            manager.acquire(
                [LockRequest(partition, LockMode.SHARED)], owner=f"t{t}", query_id=f"q{t}_{i}"
            ).release()

    before = packets(server.port)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    requests = packets(server.port) - before - 1
    print(f"{requests / (threads_n * cycles):.2f} requests per cycle")
    # alone, a cycle costs three or four requests (create, grant check unless first, the
    # release's read of its own nodes, delete); merged, about 1.5 (0.8 without that read)
    assert requests < 2.5 * threads_n * cycles
    assert [p for p in znodes(other, f"/{ns}")] == []


def test_the_shared_client_polls():
    with ZooKeeperServer() as zk:
        with ZooKeeperLockManager.connect(zk.address, "poll") as m:
            m.list_locks()
            assert isinstance(m.shared_client.client.handler, PollingHandler)


@pytest.mark.skipif(not hasattr(select, "poll"), reason="no poll(2) on this platform")
def test_polling_select_answers_as_select_does():
    handler = PollingHandler()
    a, b = socket.socketpair()
    try:
        assert handler.select([a], [], [], 0) == ([], [], [])
        assert handler.select([a], [a], [], 0) == ([], [a], [])
        b.send(b"x")
        assert handler.select([a, b], [], [], 1.0) == ([a], [], [])
        assert handler.select([a.fileno()], [], [], 0)[0] == [a.fileno()]
        b.close()  # hung up: readable (the next recv says so), as select reports it
        a.recv(1)
        assert handler.select([a], [], [], 1.0)[0] == [a]
        assert a.recv(1) == b""
        with pytest.raises(ValueError):
            handler.select([a], [], [], -1)
    finally:
        a.close()
        b.close()
    with pytest.raises(ValueError):
        handler.select([a], [], [], 0)  # a closed socket's fileno is -1


def test_reads_sent_behind_a_write_see_what_it_wrote(server, manager, other, ns):
    transport = manager.transport
    root = f"/{ns}"
    other.ensure_path(f"{root}/x")
    names = ["a", "b", "c"]
    calls = [
        lambda n=n: transport.commit_then_read(
            [create(f"{root}/x/{n}", b"x")], [children_of(f"{root}/x")], "test"
        )
        for n in names
    ]
    before = packets(server.port)
    with lined_up(transport.lanes.writes, len(names)):
        threads, results = in_threads(calls)
    for t in threads:
        t.join(30)
    assert packets(server.port) - before - 1 == 2  # one multi, the reads of all three right behind
    for n, (created, read) in zip(names, results, strict=True):
        assert created == [f"{root}/x/{n}"]
        assert read is not None and sorted(read[0]) == names  # the merged multi went first


def test_reads_behind_a_failed_merged_write_follow_each_write_alone(server, manager, other, ns):
    transport = manager.transport
    root = f"/{ns}"
    other.ensure_path(f"{root}/x")
    wanted = [("x", "a"), ("missing", "b"), ("x", "c")]
    calls = [
        lambda d=d, n=n: transport.commit_then_read(
            [create(f"{root}/{d}/{n}", b"x")], [children_of(f"{root}/{d}")], "test"
        )
        for d, n in wanted
    ]
    before = packets(server.port)
    with lined_up(transport.lanes.writes, len(wanted)):
        threads, results = in_threads(calls)
    for t in threads:
        t.join(30)
    # merged multi + merged reads, then each multi and its reads again on their own
    assert packets(server.port) - before - 1 == 2 + 2 * len(wanted)
    (a, a_read), (b, b_read), (c, c_read) = results
    assert a == [f"{root}/x/a"] and c == [f"{root}/x/c"]
    assert isinstance(multi_failure(b), NoNodeError)
    assert a_read == [["a"]]  # read right behind its own multi, before c's
    assert b_read is not None and isinstance(b_read[0], NoNodeError)
    assert c_read is not None and sorted(c_read[0]) == ["a", "c"]


def test_a_grant_check_is_read_along_with_the_create(server, manager, other, ns):
    """Beside another process's lock, the children a grant check needs come back with the
    create (sent right behind its multi), show that lock, and the statement is refused."""
    from sparklock.locks.model import LockData, LockType, build_lock_set

    partition = LockObject.of_partition("db", "t", {"p": "1"})
    elsewhere = ZooKeeperLockManager.connect(f"localhost:{server.port}", ns)
    try:
        holder = elsewhere.acquire(
            [LockRequest(partition, LockMode.EXCLUSIVE)], owner="h", query_id="h"
        )
        lock_set = build_lock_set([LockRequest(partition, LockMode.SHARED)])
        data = LockData.now("q", LockType.IMPLICIT, "", "127.0.0.1")
        nodes = manager._steps.create(list(enumerate(lock_set)), data, "o")
        try:
            for node, theirs in zip(nodes, holder.locks, strict=True):
                assert node.siblings is not None
                names = sorted(c for c in node.siblings if c.startswith("LOCK-"))
                assert names == sorted(
                    [theirs.lock_id.rsplit("/", 1)[1], node.path.rsplit("/")[-1]]
                )
            refused = manager._steps.check(nodes, "o")
            assert refused is not None and refused[0].request.obj == partition
        finally:
            manager._steps.drop(nodes)
        holder.release()
        held = manager.acquire([LockRequest(partition, LockMode.SHARED)], owner="o", query_id="q")
        held.release()
        assert list(znodes(other, f"/{ns}")) == []
    finally:
        elsewhere.close()
