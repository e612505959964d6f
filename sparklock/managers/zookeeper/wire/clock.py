"""A clock of what *other* clients wrote to ZooKeeper: the basis of re-listing only on change.

Every write ZooKeeper commits (any client's create, delete, multi...) takes the next zxid, and
every answer tells the client the newest zxid its server has applied (kazoo keeps it as
``last_zxid``). This process counts the writes it sent itself and saw succeed. The difference
``last_zxid - own writes`` therefore only grows when someone else wrote: another driver's lock or
release, Hive's ``ZooKeeperHiveLockManager``, a session that ended. Two readings that are equal
mean that between them no other client changed anything, so no foreign writer can have released
a lock (and committed files) in between -- what :mod:`sparklock.service.epochs` needs to trust a
file listing made earlier.

Errs on the safe side only: a write of ours that is not counted (sent before the clock was
attached, failed, or its outcome unknown after a lost connection) makes the clock move as if
someone else wrote; a reading taken while one of our writes is in flight is refused (None), so a
write can never be counted before its zxid is seen. Other ZooKeeper users of the same ensemble
(not locks) move the clock too: the reads then re-list, as they would without this.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kazoo import exceptions as kz
from kazoo.client import KazooClient

#: Request types (kazoo ``type``) that ZooKeeper commits as one transaction each: create,
#: delete, setData, setACL, multi, create2, createContainer, deleteContainer, createTTL.
WRITE_TYPES = frozenset({1, 2, 5, 7, 14, 15, 19, 20, 21})

#: Refusals the server decides while preparing a write's transaction, after giving it its zxid
#: (it commits an error transaction): they took a zxid like a success. Anything else (a lost
#: connection, an expired session, a read-only server) is not counted: the clock then moves.
COMMITTED_REFUSALS = (
    kz.NoNodeError,
    kz.NodeExistsError,
    kz.NotEmptyError,
    kz.BadVersionError,
    kz.NoChildrenForEphemeralsError,
    kz.RolledBackError,
    kz.RuntimeInconsistency,
)


class WriteClock:
    """Counts one kazoo client's successful writes; :meth:`reading` is the foreign-write clock."""

    def __init__(self, client: KazooClient) -> None:
        self._client = client
        self._guard = threading.Lock()
        self._started = 0  # writes sent
        self._finished = 0  # writes answered (whatever the answer)
        self._succeeded = 0  # writes ZooKeeper committed (each took exactly one zxid)
        original = client._call

        def call(request: Any, async_object: Any) -> Any:
            if getattr(request, "type", None) not in WRITE_TYPES:
                return original(request, async_object)
            with self._guard:
                self._started += 1
            return original(request, _Counted(self, async_object))

        client._call = call  # type: ignore[method-assign]

    def last_answer_zxid(self) -> int:
        """The zxid of the answer kazoo's connection thread read last (on that thread: the one
        it is handing over)."""
        return self._client.last_zxid

    def answered(self, committed: bool) -> None:
        """One write of ours has its answer (``committed``: it took a zxid)."""
        with self._guard:
            if committed:
                self._succeeded += 1
            self._finished += 1

    def reading(self, tries: int = 20) -> str | None:
        """``<client>:<foreign writes + constant>``, or None while writes of ours stay in flight
        (another thread's; tried ``tries`` times, a millisecond apart)."""
        for attempt in range(tries):
            if attempt:
                time.sleep(0.001)
            got = self._read_once()
            if got is not None:
                return got
        return None

    def _read_once(self) -> str | None:
        """Read in this order so that a write whose zxid is in ``last_zxid`` is also counted:
        every write started before the first read has finished (and was counted), none started
        since."""
        with self._guard:
            started, finished = self._started, self._finished
        zxid = self._client.last_zxid
        with self._guard:
            succeeded, started_after = self._succeeded, self._started
        if started != finished or started_after != started:
            return None
        return f"zk-{id(self._client):x}:{zxid - succeeded}"


class Committed(list):
    """A write ``multi``'s results, with the zxid of the transaction it committed as (what the
    server's answer said: ``mzxid`` and ``czxid`` of every node it created). A part of it
    (:func:`part_of`) keeps the zxid."""

    __slots__ = ("zxid",)

    def __init__(self, results: list, zxid: int) -> None:
        super().__init__(results)
        self.zxid = zxid


def part_of(results: list, start: int, end: int) -> list:
    """``results[start:end]``, a :class:`Committed` one's keeping its zxid."""
    part = results[start:end]
    return Committed(part, results.zxid) if isinstance(results, Committed) else part


def zxid_of(results: object) -> int:
    """The zxid a write multi's ``results`` committed as; 0 when not known."""
    return results.zxid if isinstance(results, Committed) else 0


class _Counted:
    """The answer object handed to kazoo in place of the caller's: counts the answer when kazoo's
    connection thread hands it over -- after kazoo recorded the answer's zxid, before the caller
    wakes up (so the caller's next reading is valid) -- and passes it on.

    A wrapper, not patched methods: the caller's object may not take new attributes (the merged
    requests' answers of :mod:`.coalescing` have slots and read-only methods)."""

    __slots__ = ("_clock", "_target")

    def __init__(self, clock: WriteClock, target: Any) -> None:
        self._clock = clock
        self._target = target

    def __bool__(self) -> bool:
        return bool(self._target)  # kazoo answers only a truthy answer object

    def set(self, value: Any = None) -> None:
        # a multi answers per operation; a refused one still took its zxid
        ok = not isinstance(value, list) or all(
            not isinstance(x, Exception) or isinstance(x, COMMITTED_REFUSALS) for x in value
        )
        self._clock.answered(ok)
        if ok and isinstance(value, list):
            # kazoo's connection thread set ``last_zxid`` from this very answer just now
            value = Committed(value, self._clock.last_answer_zxid())
        self._target.set(value)

    def set_exception(self, exc: BaseException) -> None:
        self._clock.answered(isinstance(exc, COMMITTED_REFUSALS))
        self._target.set_exception(exc)


_attach_lock = threading.Lock()


def clock_of(client: KazooClient) -> WriteClock:
    """The client's clock, attached on first use (writes sent before are simply not counted)."""
    clock = getattr(client, "_sparklock_write_clock", None)
    if clock is None:
        with _attach_lock:
            clock = getattr(client, "_sparklock_write_clock", None)
            if clock is None:
                clock = WriteClock(client)
                client._sparklock_write_clock = clock  # type: ignore[attr-defined]
    return clock
