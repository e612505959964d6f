"""Group commit: what concurrent threads ask ZooKeeper meanwhile, merged into one request.

Why: every thread of a process shares one ZooKeeper connection (HIVE-9119), and kazoo moves
requests one loop turn at a time on its single connection thread — system calls and Python for
each request and each answer. With 8 or 32 threads locking and unlocking, that thread, not
ZooKeeper, is where they all queue (~0.4 ms of its time per lock+unlock cycle of three requests).
Merging the requests that wait meanwhile into one divides that cost by the number of threads
waiting, and ZooKeeper writes one transaction to its log instead of one per thread.

Reads: a ``multiRead`` is not atomic, so the concatenated reads of several threads answer each
one exactly as its own request would have. Writes: a write ``multi`` is atomic and applied in
order, so a merged multi that succeeds is exactly the members' multis applied one after another
with nothing in between — a serial order they could have had anyway. One that fails says nothing
about whose operation failed it, or whether that one would have failed alone (a member can fail
because of an earlier member's operation), so every member's multi is then sent again on its own
and answered by its own outcome.

A request leaves at once while fewer than ``DEPTH`` requests of its lane are in flight — a lone
thread waits for nobody and pays nothing. Otherwise it waits in line, and the answer to an earlier
request (on kazoo's connection thread) sends everything waiting as one request.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

from .wire import MultiRead, WriteMulti

#: Merged requests of one lane in flight at once. 1 would serialize round trips (each waits for
#: the previous answer); 2 keeps the next request on the wire while one is answered.
DEPTH = 2


class _Member:
    """One thread's request: its operations, and its answer once there is one."""

    __slots__ = ("client", "ops", "size", "done", "value", "error")

    def __init__(self, client: KazooClient, ops: Sequence, size: int) -> None:
        self.client = client
        self.ops = ops
        self.size = size
        self.done = threading.Event()
        self.value: list | None = None
        self.error: BaseException | None = None

    def answer(self, value: list | None, error: BaseException | None) -> None:
        self.value, self.error = value, error
        self.done.set()


class _Answer:
    """What kazoo calls (on its connection thread) with the answer of a merged request."""

    __slots__ = ("lane", "members")

    def __init__(self, lane: Lane, members: list[_Member]) -> None:
        self.lane = lane
        self.members = members

    def set(self, value: object = None) -> None:
        self.lane._answered(self.members, value, None)

    def set_exception(self, exc: BaseException) -> None:
        self.lane._answered(self.members, None, exc)


class _Own:
    """The answer of one member's request sent again on its own."""

    __slots__ = ("member",)

    def __init__(self, member: _Member) -> None:
        self.member = member

    def set(self, value: object = None) -> None:
        self.member.answer(value, None)  # type: ignore[arg-type]

    def set_exception(self, exc: BaseException) -> None:
        self.member.answer(None, exc)


class Lane:
    """One kind of request (reads or writes) of one client: the line, and what is in flight."""

    def __init__(
        self,
        request: Callable[[list], object],
        atomic: bool,
        limit: int,
        not_connected: Callable[[], BaseException],
    ) -> None:
        self._request = request  # the merged operations -> one kazoo request
        self._atomic = atomic  # a failed merged request says nothing of its members (writes)
        self._limit = limit  # the most a merged request may carry (summed member sizes)
        self._not_connected = not_connected
        self._lock = threading.Lock()
        self._line: deque[_Member] = deque()
        self._in_flight = 0

    def submit(self, client: KazooClient, ops: Sequence, size: int, timeout: float) -> list:
        """Send ``ops`` (with others waiting meanwhile) and return their answers, in order.

        ``size`` is the member's weight against the lane's limit. Failures of the whole request
        (connection loss, time-out) raise, as kazoo's own ``get`` would.
        """
        member = _Member(client, ops, size)
        with self._lock:
            self._line.append(member)
            batch = self._take() if self._in_flight < DEPTH else None
        if batch is not None:
            self._send(batch)
        if not member.done.wait(timeout):
            with self._lock:
                if member in self._line:
                    self._line.remove(member)  # never sent: it never will be
            if not member.done.is_set():
                raise KazooTimeoutError(f"no answer from ZooKeeper within {timeout:g} s")
        if member.error is not None:
            raise member.error
        assert member.value is not None
        return member.value

    def _take(self) -> list[_Member] | None:
        """Under the lock: the next merged request's members (same client, within the limit)."""
        if not self._line:
            return None
        first = self._line.popleft()
        batch, size = [first], first.size
        while self._line:
            nxt = self._line[0]
            if nxt.client is not first.client or size + nxt.size > self._limit:
                break
            batch.append(self._line.popleft())
            size += nxt.size
        self._in_flight += 1
        return batch

    def _send(self, batch: list[_Member]) -> None:
        client = batch[0].client
        if not client.connected:
            # never queue in kazoo while disconnected: a request must not run after we gave up
            self._answered(batch, None, self._not_connected())
            return
        ops = batch[0].ops if len(batch) == 1 else [op for m in batch for op in m.ops]
        try:
            client._call(self._request(list(ops)), _Answer(self, batch))
        except BaseException as exc:  # pragma: no cover - _call reports through the answer
            self._answered(batch, None, exc)

    def _answered(self, batch: list[_Member], value: object, error: BaseException | None) -> None:
        """On kazoo's connection thread: hand out the answer, then send what waits meanwhile."""
        try:
            if error is not None or not isinstance(value, list):
                error = error or RuntimeError(f"unexpected ZooKeeper answer {value!r}")
                for m in batch:
                    m.answer(None, error)
            elif len(batch) == 1:
                batch[0].answer(value, None)
            elif self._atomic and any(isinstance(r, BaseException) for r in value):
                for m in batch:  # each on its own: its own outcome
                    m.client._call(self._request(list(m.ops)), _Own(m))
            else:
                start = 0
                for m in batch:
                    end = start + len(m.ops)
                    m.answer(value[start:end], None)
                    start = end
        finally:
            with self._lock:
                self._in_flight -= 1
                following = self._take() if self._in_flight < DEPTH else None
            if following is not None:
                self._send(following)


class Lanes:
    """The read and the write lane of one shared client (every manager of the process)."""

    def __init__(
        self, read_limit: int, write_limit: int, not_connected: Callable[[], BaseException]
    ) -> None:
        self.reads = Lane(MultiRead, False, read_limit, not_connected)
        self.writes = Lane(WriteMulti, True, write_limit, not_connected)


_lanes: weakref.WeakKeyDictionary[object, Lanes] = weakref.WeakKeyDictionary()
_lanes_lock = threading.Lock()


def lanes_of(
    shared: object, read_limit: int, write_limit: int, not_connected: Callable[[], BaseException]
) -> Lanes:
    """The lanes of ``shared`` (a SharedZooKeeperClient), made on first use."""
    with _lanes_lock:
        lanes = _lanes.get(shared)
        if lanes is None:
            lanes = _lanes[shared] = Lanes(read_limit, write_limit, not_connected)
        return lanes
