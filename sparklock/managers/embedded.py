"""The embedded lock manager: in-process, thread-safe, no server.

Serves one Spark application (many threads and sessions) with exactly the semantics of the
ZooKeeper manager: the same grant rule (`model.decide`), sequence order, explicit/implicit locks and
both wait policies. One condition variable guards the table; releases wake waiters at once.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..errors import DeadlockError, NotLockedError
from ..locks.model import (
    Contender,
    LockData,
    LockInfo,
    LockMode,
    LockRequest,
    LockSettings,
    LockState,
    LockType,
    compatible,
    decide,
    listing_order,
    owns,
)
from ..locks.objects import LockObject, ObjectKind
from ..locks.wait_for import Deadlock, WaitEdge, deadlocks, runs, statement
from ..locks.waiting import with_states
from .backend import Backend, ManagerConfig
from .base import (
    NEVER_LAPSES,
    AcquisitionCancelled,
    HeldLocks,
    LockManager,
    Refusal,
    conflict_error,
)

#: The write clock of a manager whose writers all live in this process (``service.epochs``).
LOCAL_CLOCK = "local"

# While queued, how often a waiter looks at its cancel flag (handoffs themselves are notified).
_CANCEL_CHECK = 0.05


@dataclass(eq=False)
class _Entry:
    seq: int
    obj: LockObject
    mode: LockMode
    data: LockData  # replaced (with ``acquired_ms``) when granted after waiting
    owner: str

    @property
    def contender(self) -> Contender:
        return Contender(self.seq, self.mode, str(self.seq))

    def info(self) -> LockInfo:
        return LockInfo(self.obj, self.mode, self.data, f"{self.seq:010d}", self.owner)


class _Infos(Sequence[LockInfo]):
    """``HeldLocks.locks`` of a granted set, each made when first read: the grant answers only
    their count, and what reads them (the journal, nested statements, a lost-locks message) is
    rare, so a wide read does not pay an object per lock it never shows. The entries do not
    change once granted, so a late copy is the one an eager one would have been."""

    __slots__ = ("_entries", "_made")

    def __init__(self, entries: list[_Entry]) -> None:
        self._entries = entries
        self._made: list[LockInfo] | None = None

    def _infos(self) -> list[LockInfo]:
        if self._made is None:
            self._made = [e.info() for e in self._entries]
        return self._made

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index):  # type: ignore[override]
        return self._infos()[index]

    def __iter__(self) -> Iterator[LockInfo]:
        return iter(self._infos())

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) else other)

    def __repr__(self) -> str:
        return repr(self._infos())


class EmbeddedLockManager(LockManager):
    kind = "embedded"

    def __init__(self, settings: LockSettings | None = None) -> None:
        super().__init__(settings)
        self._cond = threading.Condition()
        self._entries: dict[LockObject, dict[int, _Entry]] = {}
        self._seq = itertools.count()
        # ``retry`` requests sleeping between attempts: their WAITING rows, by token
        self._waiters: dict[int, LockInfo] = {}
        self._waiter_ids = itertools.count()
        # deadlocks whose victim was woken already (a victim wakes once per cycle, not per waiter)
        self._announced: set[tuple[str, frozenset[WaitEdge]]] = set()

    # -- grant rule helpers (call with the condition held) ------------------------------------
    def _blockers(self, entry: _Entry) -> list[_Entry]:
        siblings = self._entries.get(entry.obj, {})
        if len(siblings) <= 1:  # only itself (the common case of a wide lock set): nothing blocks
            return []
        by_key = {str(e.seq): e for e in siblings.values()}

        def own_explicit(c: Contender) -> bool:
            return _is_own_explicit(entry.owner, by_key[c.key])

        decision = decide(entry.contender, [e.contender for e in siblings.values()], own_explicit)
        return [by_key[c.key] for c in decision.blockers]

    def _insert(self, req: LockRequest, data: LockData, owner: str) -> tuple[_Entry, bool]:
        """The entry of ``req``, and whether it is alone on its object: nothing can block it then
        (the common case of a wide lock set, one dictionary lookup per lock)."""
        entry = _Entry(next(self._seq), req.obj, req.mode, data, owner)
        bucket = self._entries.get(req.obj)
        if bucket is None:
            self._entries[req.obj] = {entry.seq: entry}
            return entry, True
        bucket[entry.seq] = entry
        return entry, False

    def _remove(self, entries: Sequence[_Entry]) -> int:
        removed = 0
        by_object = self._entries
        for e in entries:
            # Taken out whole and put back only if others still lock the object: one lookup
            # for each lock a wide set held alone.
            bucket = by_object.pop(e.obj, None)
            if bucket is None:
                continue
            if bucket.pop(e.seq, None) is not None:
                removed += 1
            if bucket:
                by_object[e.obj] = bucket
        if removed:
            self._cond.notify_all()
        return removed

    def _held(self, entries: list[_Entry], data: LockData, owner: str) -> HeldLocks:
        x = LockMode.EXCLUSIVE  # an enum member looked up once, not per lock
        exclusive = [e.obj for e in entries if e.mode is x]
        return HeldLocks(
            owner,
            data.query_id,
            data.lock_type,
            _Infos(entries),
            self,
            handles=entries,
            exclusive=exclusive,
        )

    # -- policies -----------------------------------------------------------------------------
    def _attempt(
        self, lock_set: Sequence[LockRequest], data: LockData, owner: str
    ) -> HeldLocks | Refusal:
        if data.wait_since_ms:  # a later attempt: its locks are taken now (SHOW LOCKS' times)
            data = dataclasses.replace(data, lock_time_ms=int(time.time() * 1000))
        with self._cond:
            taken: list[_Entry] = []
            for req in lock_set:
                entry, alone = self._insert(req, data, owner)
                taken.append(entry)
                if alone:
                    continue
                blockers = self._blockers(entry)
                if blockers:
                    self._remove(taken)
                    return Refusal(req, [b.info() for b in blockers])
            return self._held(taken, data, owner)

    def _acquire_queued(self, lock_set, data, owner, settings, cancel, waiter) -> HeldLocks:
        deadline = time.monotonic() + settings.budget
        taken: list[_Entry] = []
        with self._cond:
            for req in lock_set:
                entry, alone = self._insert(req, data, owner)
                taken.append(entry)
                if alone:
                    continue
                waited = False
                while True:
                    blockers = self._blockers(entry)
                    if not blockers:
                        if waited:  # SHOW LOCKS: granted now, after waiting since lock_time
                            now = int(time.time() * 1000)
                            entry.data = dataclasses.replace(entry.data, acquired_ms=now)
                        break
                    waited = True
                    if not data.wait_since_ms:  # the set's later locks: since when it waited
                        data = dataclasses.replace(data, wait_since_ms=entry.data.lock_time_ms)
                    refusal = Refusal(req, [b.info() for b in blockers])
                    self._give_up_if_victim(owner, data.query_id, req, taken)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        self._remove(taken)
                        raise conflict_error(refusal, 1, waiter.elapsed())
                    if cancel is not None and cancel.is_set():
                        self._remove(taken)
                        raise AcquisitionCancelled(req.name)
                    waiter.waiting(refusal)
                    slice_s = min(remaining, _CANCEL_CHECK) if cancel else remaining
                    self._cond.wait(min(slice_s, max(waiter.until_warning(), 0.01)))
            return self._held(taken, data, owner)

    # -- deadlocks (call with the condition held) ----------------------------------------------
    def _wait_edges(self) -> list[WaitEdge]:
        """Who waits for whom now (:mod:`sparklock.locks.wait_for`): queued entries behind their
        blockers, and ``retry`` requests between attempts behind the entries that refused them."""
        edges = []
        for bucket in self._entries.values():
            if len(bucket) < 2:
                continue
            for e in bucket.values():
                blockers = self._blockers(e)
                if blockers:
                    since = e.data.wait_since_ms or e.data.lock_time_ms
                    edges += _edges(e.owner, e.data.query_id, e.obj, e.mode, since, blockers)
        for row in self._waiters.values():
            if row.owner is None:
                continue
            blockers = [
                b
                for b in self._entries.get(row.obj, {}).values()
                if not _is_own_explicit(row.owner, b) and not compatible(row.mode, b.mode)
            ]
            since = row.data.wait_since_ms or row.data.lock_time_ms
            edges += _edges(row.owner, row.data.query_id, row.obj, row.mode, since, blockers)
        return edges

    def _deadlock_of(self, owner: str, query_id: str) -> Deadlock | None:
        node = statement(owner, query_id)
        for found in deadlocks(self._wait_edges()):
            if node in found.owners:
                return found
        return None

    def _give_up_if_victim(
        self, owner: str, query_id: str, req: LockRequest, taken: list[_Entry]
    ) -> None:
        """Raise :class:`DeadlockError` (nothing held) if the statement waits in a cycle and is
        its victim; if another is, wake it so that it gives up now rather than at its next look."""
        found = self._deadlock_of(owner, query_id)
        if found is None:
            return
        if found.victim == statement(owner, query_id):
            self._remove(taken)
            raise deadlock_error(found, req)
        key = (found.victim, frozenset(found.cycle))
        if key not in self._announced:
            if len(self._announced) > 1024:
                self._announced.clear()
            self._announced.add(key)
            self._cond.notify_all()

    def _check_deadlock(self, owner: str, query_id: str, refusal: Refusal, since_ms: int) -> None:
        """A ``retry`` request between attempts (it holds none of its set)."""
        with self._cond:
            self._give_up_if_victim(owner, query_id, refusal.request, [])

    # -- the rest of the API ------------------------------------------------------------------
    def release(self, held: HeldLocks) -> None:
        with self._cond:
            self._remove(held.handles)
            held.released = True

    def list_locks(
        self, obj: LockObject | None = None, *, descendants: bool = True, waiting: bool = False
    ) -> list[LockInfo]:
        def wanted(o: LockObject) -> bool:
            return obj is None or o == obj or (descendants and obj.is_ancestor_of(o))

        infos: list[LockInfo] = []
        with self._cond:
            for o, bucket in self._entries.items():
                if wanted(o):
                    infos += [info for _, info in self._states(bucket)]
            if waiting:
                infos += [w for w in self._waiters.values() if wanted(w.obj)]
        return sorted(infos, key=listing_order)

    def _show_waiting(self, shown: object | None, row: LockInfo) -> object | None:
        token = shown if isinstance(shown, int) else next(self._waiter_ids)
        with self._cond:
            self._waiters[token] = dataclasses.replace(row, lock_id=f"waiting-{token:010d}")
        return token

    def _hide_waiting(self, shown: object) -> None:
        with self._cond:
            self._waiters.pop(shown, None)  # type: ignore[call-overload]

    def _states(self, bucket: dict[int, _Entry]) -> list[tuple[_Entry, LockInfo]]:
        """The entries of one object with their listed state by the grant rule (call with the
        condition held)."""
        entries = {f"{e.seq:010d}": e for e in bucket.values()}
        infos = with_states(
            [e.info() for e in entries.values()],
            lambda i: entries[i.lock_id].seq,
            lambda i, c: _is_own_explicit(entries[i.lock_id].owner, entries[c.key]),
        )
        return [(entries[i.lock_id], i) for i in infos]

    def unlock(
        self,
        obj: LockObject,
        *,
        check: Callable[[Sequence[LockInfo]], None] | None = None,
        explicit_only: bool = False,
    ) -> list[LockInfo]:
        """Remove the granted locks on ``obj``; requests queued for it keep their place in line
        (they hold nothing, and taking them out would send their statements to the back)."""
        with self._cond:
            granted = [
                (e, i)
                for e, i in self._states(self._entries.get(obj, {}))
                if i.state is LockState.ACQUIRED
                and (not explicit_only or i.data.lock_type is LockType.EXPLICIT)
            ]
            if granted and check is not None:
                check([i for _, i in granted])  # may refuse: nothing removed
            self._remove([e for e, _ in granted])
        if not granted:
            raise NotLockedError(obj.name, _kind_word(obj))
        return sorted((i for _, i in granted), key=listing_order)

    def owners_alive(self, infos: Sequence[LockInfo]) -> list[bool | None]:
        return [True] * len(infos)  # every owner of these locks lives in this driver

    def write_clock(self) -> str | None:
        return LOCAL_CLOCK  # every writer of these locks lives in this process

    def lease_until(self) -> float:
        return NEVER_LAPSES

    def lock_count(self) -> int:
        """Locks currently stored (for memory checks: O(locks held))."""
        with self._cond:
            return sum(len(b) for b in self._entries.values())


def _is_own_explicit(owner: str, other: _Entry) -> bool:
    """Whether ``other`` does not count against a request of ``owner``: its own explicit lock,
    or a lock of an enclosing execution of the same statement."""
    if owns(owner, f"{other.seq:010d}"):
        return True
    return other.owner == owner and other.data.lock_type.value == "EXPLICIT"


def _edges(
    owner: str, query_id: str, obj: LockObject, mode: LockMode, since: int, blockers: list[_Entry]
) -> list[WaitEdge]:
    """A waiting statement's edges: to each blocker's statement (implicit) or session (explicit),
    and its session's edge to it."""
    waiter = statement(owner, query_id)
    edges = [runs(owner, query_id, since)]
    for b in blockers:
        explicit = b.data.lock_type is LockType.EXPLICIT
        holder = b.owner if explicit else statement(b.owner, b.data.query_id)
        edges.append(WaitEdge(waiter, holder, obj.name, mode, b.mode, since))
    return edges


def deadlock_error(found: Deadlock, req: LockRequest) -> DeadlockError:
    """The victim's error: the lock it wanted and the cycle it broke."""
    return DeadlockError(req.name, req.mode.value, found.describe(), found.victim)


def _kind_word(obj: LockObject) -> str:
    return {
        ObjectKind.DATABASE: "Database",
        ObjectKind.TABLE: "Table",
        ObjectKind.PARTITION: "Partition",
    }[obj.kind]


def _create(config: ManagerConfig) -> EmbeddedLockManager:
    return EmbeddedLockManager(config.lock)


#: The registry's entry: locks that live and die with this process.
BACKEND = Backend(
    name="embedded", summary="`embedded` (in-process; one Spark application)", create=_create
)
