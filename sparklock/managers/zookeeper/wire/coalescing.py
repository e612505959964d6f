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

import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence

from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError

from .clock import part_of
from .multi import MultiRead, WriteMulti

log = logging.getLogger("sparklock.zookeeper")

#: Merged requests of one lane in flight at once. 1 would serialize round trips (each waits for
#: the previous answer); 2 keeps the next request on the wire while one is answered.
DEPTH = 2


class _Member:
    """One thread's request: its operations (and, for a write, the reads to run right after it),
    and its answers once they are in."""

    __slots__ = (
        "client",
        "ops",
        "size",
        "reads",
        "done",
        "value",
        "error",
        "read",
        "awaiting",
        "round",
    )

    def __init__(
        self, client: KazooClient, ops: Sequence, size: int, reads: Sequence | None = None
    ) -> None:
        self.client = client
        self.ops = ops
        self.size = size
        self.reads = reads or None
        self.done = threading.Event()
        self.value: list | None = None
        self.error: BaseException | None = None
        self.read: list | BaseException | None = None  # the answer to ``reads``
        self.awaiting = 2 if self.reads else 1
        self.round = 0  # bumped when sent again alone: answers of an earlier round are void

    def answer(self, value: list | None, error: BaseException | None) -> None:
        """The answer to ``ops``; an error ends the member (its reads say nothing then)."""
        self.value, self.error = value, error
        self.awaiting = 0 if error is not None else self.awaiting - 1
        if self.awaiting == 0:
            self.done.set()

    def answer_reads(self, read: list | BaseException, round_: int) -> None:
        if self.done.is_set() or round_ != self.round:
            return
        self.read = read
        self.awaiting -= 1
        if self.awaiting == 0:
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


class _ReadsAnswer:
    """The answer of the reads sent right after a write, split among its members."""

    __slots__ = ("shares",)

    def __init__(self, members: list[_Member]) -> None:
        # (member, how many of the reads are its, the round they belong to)
        self.shares = [(m, len(m.reads or ()), m.round) for m in members]

    def set(self, value: object = None) -> None:
        if not isinstance(value, list):
            self.set_exception(RuntimeError(f"unexpected ZooKeeper answer {value!r}"))
            return
        start = 0
        for m, count, round_ in self.shares:
            m.answer_reads(value[start : start + count], round_)
            start += count

    def set_exception(self, exc: BaseException) -> None:
        for m, _, round_ in self.shares:
            m.answer_reads(exc, round_)


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

    def submit(
        self,
        client: KazooClient,
        ops: Sequence,
        size: int,
        timeout: float,
        reads: Sequence | None = None,
    ) -> tuple[list, list | BaseException | None]:
        """Send ``ops`` (with others waiting meanwhile); their answers, in order, and the answer
        to ``reads`` — read operations sent right behind them, so that ZooKeeper, which runs a
        session's requests in order, reads the tree as the write left it, without waiting a round
        trip for it (None when not asked; an exception when the write went through but the
        reads failed: read again).

        ``size`` is the member's weight against the lane's limit. Failures of the whole request
        (connection loss, time-out) raise, as kazoo's own ``get`` would.
        """
        return self.wait(self.send(client, ops, size, reads), timeout)

    def send(
        self, client: KazooClient, ops: Sequence, size: int, reads: Sequence | None = None
    ) -> _Member:
        """``submit`` without waiting: the request to ``wait`` for. Several sent in a row are
        pipelined (a wide lock set's multis): ZooKeeper runs them in the order sent."""
        member = _Member(client, ops, size, reads)
        with self._lock:
            self._line.append(member)
            batch = self._take() if self._in_flight < DEPTH else None
        if batch is not None:
            self._send(batch)
        return member

    def send_all(
        self, client: KazooClient, requests: Sequence[tuple[Sequence, int, Sequence | None]]
    ) -> list[_Member]:
        """``send`` each ``(ops, size, reads)`` in order, every one of them at once (not ``DEPTH``
        at a time): a wide lock set's multis then cost one round trip, not one per ``DEPTH``
        multis — what counts where ZooKeeper is a network hop away. Others' requests waiting
        ahead of them go along."""
        members = [_Member(client, ops, size, reads) for ops, size, reads in requests]
        if not members:
            return members
        batches = []
        last = members[-1]
        with self._lock:
            self._line.extend(members)
            while self._line:
                if self._in_flight >= DEPTH and last not in self._line:
                    break
                batch = self._take()
                assert batch is not None
                batches.append(batch)
        for batch in batches:
            self._send(batch)
        return members

    def wait(self, member: _Member, timeout: float) -> tuple[list, list | BaseException | None]:
        """The answers of a ``send`` (as ``submit``'s); a request still in line when the wait
        times out is withdrawn (it never runs)."""
        if not member.done.wait(timeout):
            self.withdraw(member)
            if not member.done.is_set():
                raise KazooTimeoutError(f"no answer from ZooKeeper within {timeout:g} s")
        if member.error is not None:
            raise member.error
        assert member.value is not None
        return member.value, member.read

    def withdraw(self, member: _Member) -> bool:
        """Take a request out of the line if it was not sent yet (it then never runs)."""
        with self._lock:
            if member in self._line:
                self._line.remove(member)
                return True
        return False

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
        reading = [m for m in batch if m.reads]
        try:
            client._call(self._request(list(ops)), _Answer(self, batch))
            if reading:  # right behind the write: kazoo sends its requests in order
                reads = [op for m in reading for op in m.reads]  # type: ignore[union-attr]
                client._call(MultiRead(reads), _ReadsAnswer(reading))
        except BaseException as exc:  # pragma: no cover - _call reports through the answer
            self._answered(batch, None, exc)

    def _answered(self, batch: list[_Member], value: object, error: BaseException | None) -> None:
        """On kazoo's connection thread: hand out the answer, then send what waits meanwhile."""
        try:
            self._hand_out(batch, value, error)
        except Exception as exc:  # never into kazoo's connection loop: it would stop
            log.exception("sparklock: handing out a ZooKeeper answer failed")
            for m in batch:
                if not m.done.is_set():
                    m.answer(None, exc)
        finally:
            with self._lock:
                self._in_flight -= 1
                following = self._take() if self._in_flight < DEPTH else None
            if following is not None:
                self._send(following)

    def _hand_out(self, batch: list[_Member], value: object, error: BaseException | None) -> None:
        """Each member its share of the answer (or the whole request's failure)."""
        if error is not None or not isinstance(value, list):
            error = error or RuntimeError(f"unexpected ZooKeeper answer {value!r}")
            for m in batch:
                m.answer(None, error)
        elif len(batch) == 1:
            batch[0].answer(value, None)
        elif self._atomic and any(isinstance(r, BaseException) for r in value):
            self._each_alone(batch)
        else:
            start = 0
            for m in batch:
                end = start + len(m.ops)
                m.answer(part_of(value, start, end), None)
                start = end

    def _each_alone(self, batch: list[_Member]) -> None:
        """A merged write failed: send each member's again on its own (its reads after it; the
        merged reads, which saw the tree before, are dropped)."""
        for m in batch:
            m.round += 1  # the merged reads' answer, still to come, is not its answer
            m.awaiting = 2 if m.reads else 1
            m.client._call(self._request(list(m.ops)), _Own(m))
            if m.reads:
                m.client._call(MultiRead(list(m.reads)), _ReadsAnswer([m]))


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
