"""The metastore lock manager: locks kept in the Hive metastore (``HIVE_LOCKS``), where Hive 3 and
4's ``DbTxnManager`` keeps its own, so Hive's statements and Spark's wait for each other.

A statement's whole lock set is ONE ``lock`` request: the metastore grants it all-or-nothing and
queues it fairly (a later request waits behind an earlier conflicting one, granted or waiting).
The ``queue`` policy keeps that place in line and polls ``check_lock``; ``retry`` (Hive's own
non-blocking use) withdraws a waiting request and asks again after the retry interval. Held and
waiting requests are heartbeated (:mod:`.heartbeats`); a dead driver's expire after the
metastore's ``metastore.txn.timeout``, explicit LOCK TABLE locks included (they live as long as
the process holding them, as Hive's do).
"""

from __future__ import annotations

import dataclasses
import getpass
import logging
import threading
import time
from collections.abc import Callable, Sequence

from ...errors import DeadlockError, LockManagerUnavailableError, NotLockedError, UnlockError
from ...locks.model import LockData, LockInfo, LockMode, LockRequest, LockType, listing_order
from ...locks.objects import LockObject, ObjectKind
from ..base import (
    AcquisitionCancelled,
    HeldLocks,
    LockManager,
    Refusal,
    conflict_error,
)
from ..wait_log import WAIT_LOG_INTERVAL
from . import agent_info, liveness, mapping, wait_graph, wire
from .client import MetastoreClient, MetastoreUnavailable, odd_state
from .heartbeats import Heartbeats
from .naming import Names
from .settings import TXN_TIMEOUT, MetastoreSettings, parse_hive_time

log = logging.getLogger("sparklock")

_FIRST_CHECK = 0.02  # the first pause of a queued request; doubles up to checkInterval
_KIND_WORD = {ObjectKind.DATABASE: "Database", ObjectKind.PARTITION: "Partition"}  # else Table


@dataclasses.dataclass(eq=False)
class _Mine:
    """A request this process made: what SHOW LOCKS can say of it beyond the metastore's row."""

    data: LockData
    owner: str
    sent: list[LockRequest]


class MetastoreLockManager(LockManager):
    kind = "metastore"

    def __init__(self, settings: MetastoreSettings, lock_settings=None) -> None:
        super().__init__(lock_settings)
        if not settings.uris:
            raise LockManagerUnavailableError(
                "no metastore URI: set spark.sparklock.metastore.uris or hive.metastore.uris"
            )
        self.metastore = settings
        self.names = Names(frozenset(c.lower() for c in settings.catalogs))
        self.client = MetastoreClient(settings.uris, timeout=settings.socket_timeout)
        self._txn_timeout = settings.txn_timeout
        self.heartbeats = Heartbeats(
            self.client, self.txn_timeout, settings.heartbeat_interval, settings.lease_margin
        )
        self._mine: dict[int, _Mine] = {}
        self._guard = threading.Lock()
        self._graph_rows: tuple[float, list] = (-1.0, [])  # (monotonic read time, show_locks)
        self.user = getpass.getuser()

    def txn_timeout(self) -> float:
        """The metastore's lock timeout: configured, else asked once from the metastore."""
        if self._txn_timeout is None:
            try:
                raw = self._call(self.client.config_value, "metastore.txn.timeout", "300s")
                timeout = parse_hive_time(raw)
            except (ValueError, wire.ThriftError) as e:  # unreadable, or the call refused
                raise LockManagerUnavailableError(f"{e}; set {TXN_TIMEOUT}") from e
            self.metastore.timing(timeout)  # ConfigError: a margin this timeout cannot keep
            self._txn_timeout = timeout
        return self._txn_timeout

    def check_reachable(self) -> None:
        """At session start: the metastore answers, and its lock timeout leaves the lease a
        valid margin (asked once, as the first lock would)."""
        self.txn_timeout()

    @staticmethod
    def _call(fn: Callable, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except MetastoreUnavailable as e:
            raise LockManagerUnavailableError(f"Hive metastore: {e}") from e

    # -- asking ------------------------------------------------------------------------------
    def _sent(
        self, lock_set: Sequence[LockRequest], owner: str
    ) -> tuple[list[LockRequest], tuple[int, ...]]:
        """What to ask for: the set as the metastore's rule needs it, less what the owner's own
        locks (its LOCK TABLE locks, its enclosing execution's) already keep others off; and the
        requests of those own locks the statement then lives under (its lease depends on them)."""
        own_ids = getattr(owner, "own_locks", frozenset())
        own: list[tuple[LockObject, LockMode, int]] = []
        with self._guard:
            for lockid, mine in self._mine.items():
                explicit = mine.owner == owner and mine.data.lock_type is LockType.EXPLICIT
                for i, r in enumerate(mine.sent, 1):
                    if explicit or f"{lockid}.{i}" in own_ids:
                        own.append((r.obj, r.mode, lockid))
        wanted = mapping.sent_requests(lock_set)
        if not own:
            return wanted, ()
        sent: list[LockRequest] = []
        under: list[int] = []
        for r in wanted:
            by = next((k for obj, mode, k in own if self.names.covered(r, obj, mode)), None)
            if by is None:
                sent.append(r)
            elif by not in under:
                under.append(by)
        return sent, tuple(under)

    def _request(self, sent: list[LockRequest], data: LockData, owner: str) -> object:
        """One ``lock`` call; the request is heartbeated from the moment it exists."""
        components = [mapping.component(r, self.names.catalogs) for r in sent]
        self.txn_timeout()  # known before a lease needs it
        started = time.monotonic()
        response = self._call(
            self.client.lock,
            components,
            user=data.user or self.user,
            hostname=data.client or self.client_address,
            agent=agent_info.encode(data, owner),
        )
        with self._guard:
            self._mine[response.lockid] = _Mine(data, owner, sent)
        self.heartbeats.add(response.lockid, started)
        return response

    def _held(
        self,
        lockid: int | None,
        sent: list[LockRequest],
        data: LockData,
        owner: str,
        under: tuple[int, ...] = (),
    ) -> HeldLocks:
        """The granted set; its lease term lives under its own request and ``under`` (the own
        LOCK TABLE requests covering what it did not send)."""
        locks = [
            LockInfo.granted(r.obj, r.mode, data, f"{lockid}.{i}", owner)
            for i, r in enumerate(sent, 1)
        ]
        exclusive = [r.obj for r in sent if r.mode is LockMode.EXCLUSIVE]
        held = HeldLocks(
            owner, data.query_id, data.lock_type, locks, self,
            handles=[lockid] if lockid is not None else [], exclusive=exclusive,
        )  # fmt: skip
        if lockid is not None:
            self.heartbeats.attach(lockid, held)
        if data.lock_type is LockType.IMPLICIT:  # statements: what the JVM fences
            own = (lockid,) if lockid is not None else ()
            held.lease_epoch = self.heartbeats.open_term(held, own + under)
        return held

    def _withdraw(self, lockid: int) -> None:
        """Take back a request not granted (refused, cancelled, out of time)."""
        self.heartbeats.remove(lockid)
        with self._guard:
            self._mine.pop(lockid, None)
        try:
            self.client.unlock(lockid)
        except wire.ThriftError:
            pass  # already gone
        except MetastoreUnavailable:
            pass  # unheartbeated from now on: the metastore expires it after its timeout

    def _refusal(self, lockid: int, lock_set: Sequence[LockRequest], sent) -> Refusal:
        """Why request ``lockid`` waits: the locks SHOW LOCKS names as blocking it."""
        dbs = {mapping.metastore_database(self.names.hive(r.obj)) for r in sent}
        rows = self._call(self.client.show_locks, dbs.pop() if len(dbs) == 1 else None)
        blocker_ids = {r.blockedByExtId for r in rows if r.lockid == lockid and r.blockedByExtId}
        blocking = [r for r in rows if r.lockid in blocker_ids]
        holders = self._infos(blocking, [r.obj for r in sent])
        holders = [h for h in holders if any(self.names.meets(q, h) for q in sent)]
        return Refusal(self.names.refused_request(lock_set, holders), holders)

    def _known(self) -> dict[int, tuple[LockData, str]]:
        with self._guard:
            return {k: (m.data, m.owner) for k, m in self._mine.items()}

    def _infos(self, rows: Sequence, like: Sequence[LockObject] = ()) -> list[LockInfo]:
        """SHOW LOCKS rows as sparklock lists them, named as asked (:class:`.naming.Names`)."""
        with self._guard:
            asked = {k: [r.obj for r in m.sent] for k, m in self._mine.items()}
            known = {k: (m.data, m.owner) for k, m in self._mine.items()}
        return self.names.infos(rows, known, asked, like)

    # -- policies -----------------------------------------------------------------------------
    def _attempt(self, lock_set, data, owner) -> HeldLocks | Refusal:
        sent, under = self._sent(lock_set, owner)
        if not sent:
            return self._held(None, sent, data, owner, under)
        if data.wait_since_ms:  # a later attempt: its locks are taken now
            data = dataclasses.replace(data, lock_time_ms=int(time.time() * 1000))
        response = self._request(sent, data, owner)
        if response.state == wire.ACQUIRED:
            return self._held(response.lockid, sent, data, owner, under)
        try:
            if response.state != wire.WAITING:
                raise odd_state(response)
            return self._refusal(response.lockid, lock_set, sent)
        finally:
            self._withdraw(response.lockid)

    def _acquire_queued(self, lock_set, data, owner, settings, cancel, waiter) -> HeldLocks:
        sent, under = self._sent(lock_set, owner)
        if not sent:
            return self._held(None, sent, data, owner, under)
        deadline = time.monotonic() + settings.budget
        response = self._request(sent, data, owner)
        asked = time.monotonic()  # a listing read from now on has this request in it
        lockid = response.lockid
        pause, next_log, next_look = _FIRST_CHECK, 0.0, 0.0
        try:
            while response.state == wire.WAITING:
                now = time.monotonic()
                if now >= next_log:  # what it waits for, logged every few seconds
                    waiter.waiting(self._refusal(lockid, lock_set, sent))
                    next_log = now + WAIT_LOG_INTERVAL
                if now >= next_look:  # a deadlock: at once, then every LOOK_INTERVAL
                    self._give_up_if_victim(lockid, asked)
                    next_look = time.monotonic() + wait_graph.LOOK_INTERVAL
                if now >= deadline:
                    refusal = self._refusal(lockid, lock_set, sent)
                    raise conflict_error(refusal, 1, waiter.elapsed())
                wait = min(pause, deadline - now)
                if cancel.wait(wait) if cancel is not None else time.sleep(wait):
                    raise AcquisitionCancelled(sent[0].name)
                pause = min(pause * 2, self.metastore.check_interval)
                lease = self.heartbeats.lease(lockid)
                if lease is None or lease.lost:
                    raise LockManagerUnavailableError(
                        f"queued lock request {lockid} lost: {lease.lost if lease else 'expired'}"
                    )
                try:
                    response = self._call(self.client.check_lock, lockid)
                except wire.ThriftError as e:
                    raise LockManagerUnavailableError(f"queued lock request {lockid}: {e}") from e
            if response.state != wire.ACQUIRED:
                raise odd_state(response)
        except BaseException:
            self._withdraw(lockid)
            raise
        if pause > _FIRST_CHECK:  # granted after waiting: SHOW LOCKS says since when
            data = dataclasses.replace(
                data, wait_since_ms=data.lock_time_ms, acquired_ms=int(time.time() * 1000)
            )
            with self._guard:
                if lockid in self._mine:
                    self._mine[lockid].data = data
        return self._held(lockid, sent, data, owner, under)

    def _give_up_if_victim(self, lockid: int, asked: float) -> None:
        """Raise :class:`DeadlockError` if waiting request ``lockid`` (made by ``asked``) is the
        victim of a cycle in the metastore's wait-for graph (:mod:`.wait_graph`); the caller
        withdraws the request. The process's waiters share one ``show_locks`` per
        ``LOOK_INTERVAL`` (one read after the request was made); a failed listing skips a look."""
        now = time.monotonic()
        read_at, rows = self._graph_rows
        if read_at < asked or now - read_at >= wait_graph.LOOK_INTERVAL:
            try:
                rows = self.client.show_locks()
            except (MetastoreUnavailable, wire.ThriftError) as e:
                log.debug("sparklock: no deadlock check this time (%r)", e)
                return
            self._graph_rows = (now, rows)
        found = wait_graph.victim_cycle(rows, lockid)
        if found is None:
            return
        log.warning("sparklock: %s", found.describe())
        edge = wait_graph.refused_edge(found)
        raise DeadlockError(edge.obj, edge.waiter_mode.value, found.describe(), found.victim)

    # -- the rest of the API ------------------------------------------------------------------
    def release(self, held: HeldLocks) -> None:
        if held.released:
            return
        self.heartbeats.close_term(held.lease_epoch)
        failed: list[str] = []
        for lockid in held.handles:
            self.heartbeats.remove(lockid)
            with self._guard:
                self._mine.pop(lockid, None)
            for attempt in range(1, self.settings.unlock_num_retries + 1):
                try:
                    self.client.unlock(lockid)
                    break
                except wire.NoSuchLockException:
                    break  # expired or UNLOCKed meanwhile: nothing left to release
                except (wire.ThriftError, MetastoreUnavailable) as e:
                    if attempt == self.settings.unlock_num_retries:
                        failed.append(f"{lockid} ({e})")
        held.released = True
        if failed:
            raise UnlockError(
                f"could not release metastore lock request(s) {', '.join(failed)} of query "
                f"{held.query_id}; no longer heartbeated, the metastore expires them after "
                f"{self.txn_timeout():.0f} s"
            )

    def list_locks(
        self, obj: LockObject | None = None, *, descendants: bool = True, waiting: bool = False
    ) -> list[LockInfo]:
        hive = self.names.hive(obj) if obj is not None else None
        if hive is None or (descendants and mapping.spans_databases(hive)):
            rows = self._call(self.client.show_locks)
        else:
            rows = self._call(self.client.show_locks, mapping.metastore_database(hive), hive.table)
        infos = self._infos(rows, [obj] if obj is not None else ())
        if obj is not None:
            infos = [i for i in infos if self.names.listed(i.obj, obj, descendants)]
        return sorted(infos, key=listing_order)

    def unlock(
        self,
        obj: LockObject,
        *,
        check: Callable[[Sequence[LockInfo]], None] | None = None,
        explicit_only: bool = False,
    ) -> list[LockInfo]:
        """Withdraw every granted request holding a lock on exactly ``obj`` (the metastore
        releases a request whole: a statement's set goes with its lock on ``obj``)."""
        known = self._known()
        hive = self.names.hive(obj)
        rows = self._call(self.client.show_locks, mapping.metastore_database(hive), hive.table)
        rows = [r for r in rows if r.state == wire.ACQUIRED and mapping.row_object(r) == hive]
        if explicit_only:  # its agent info says (a Hive client's request counts as implicit)
            explicit = LockType.EXPLICIT
            rows = [r for r in rows if mapping.row_info(r, known).data.lock_type is explicit]
        infos = sorted(self._infos(rows, [obj]), key=listing_order)
        if not infos:
            raise NotLockedError(obj.name, _KIND_WORD.get(obj.kind, "Table"))
        if check is not None:
            check(infos)  # may refuse: nothing removed
        for lockid in sorted({r.lockid for r in rows}):
            self.heartbeats.remove(lockid)
            with self._guard:
                self._mine.pop(lockid, None)
            try:
                self._call(self.client.unlock, lockid)
            except wire.NoSuchLockException:
                pass
            except wire.TxnOpenException as e:
                raise UnlockError(
                    f"lock request {lockid} on {obj.name} belongs to an open Hive transaction "
                    f"(released when it commits or aborts): {e}"
                ) from e
        return infos

    def owners_alive(self, infos: Sequence[LockInfo]) -> list[bool | None]:
        """Per lock, from the metastore's heartbeats (:mod:`.liveness`); one ``show_locks``."""
        rows = self._call(self.client.show_locks) if infos else []
        return liveness.owners_alive(infos, rows, self._known(), self.txn_timeout(), time.time())

    def lease_until(self) -> float:
        """The earliest lease deadline of the requests held (:mod:`.heartbeats`): until then
        none of them can have been expired by the metastore."""
        return self.heartbeats.lease_until()

    def held_lease(self, held: HeldLocks) -> tuple[int, int] | None:
        """The term of ``held`` (:mod:`.heartbeats`): its own epoch, until the earliest deadline
        of the requests it lives under; a deadline already passed when one of them is gone,
        which fails the statement with LOCKS_LOST before it starts."""
        if held.lease_epoch is None:
            return None
        term = self.heartbeats.term(held.lease_epoch)
        if term is None or not term[1]:
            held.mark_lost("a metastore lock request it lives under was lost before it started")
            return (held.lease_epoch, 0)
        return term

    def watch_lease(self, listener: Callable[[int, int], None]) -> None:
        self.heartbeats.add_listener(listener)

    def close(self) -> None:
        self.heartbeats.close()
        self.client.close()
        super().close()
