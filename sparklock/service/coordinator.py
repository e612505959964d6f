"""``LockService``, the coordinator: what the JVM calls (typed facts and requests).

It turns an execution's facts into a lock set (``policy``), takes it from the process-wide manager
for the session's configuration, keeps the handle until the JVM releases it, and answers the lock
statements (SHOW LOCKS, LOCK/UNLOCK, EXPLAIN LOCKS). No Spark import: tests drive it with
``sparklock.rules.facts.parse_facts`` of plain dicts.

Reliability rules (nothing leaked, nothing unprotected), each kept by a module of its own that the
service wires together -- :mod:`.cancellation`, :mod:`.fencing`, :mod:`.release_retrier`,
:mod:`.journal`:

* **Waits can be cancelled.** Every acquisition waits with a cancel ``Event`` registered under its
  session, job group and job tags (facts ``jobGroup``/``jobTags``); :meth:`LockService.cancel_waits`
  ends matching waits with ``LOCK_WAIT_CANCELLED`` (nothing held). ``sparklock.spark.callback``
  calls it from PySpark's ``cancelAllJobs``/``cancelJobGroup``/``cancelJobsWithTag``/
  ``interruptAll`` (and so from Ctrl-C, whose handler calls ``cancelAllJobs``).
* **Fencing.** When a handle's locks are lost (session expired, removed elsewhere) the fencers
  run at once (the JVM fences the statement), and its release raises ``LOCKS_LOST``.
* **Release failures are reported and retried.** A release that still fails after
  ``spark.sparklock.unlock.numRetries`` raises ``UNLOCK_FAILED`` to the statement, and the handle is
  kept and retried in the background until its locks are gone (released, or dead with the
  session) -- see :meth:`LockService.unreleased`. The retrier gives a handle up (one WARNING)
  once retrying is pointless: its locks are lost (the session expired, or was presumed expired
  after a whole session timeout without a server, see
  ``sparklock.managers.zookeeper.wire.session``) or its manager was closed
  (``LockManager.close``, ``sparklock.managers.close_all``); the thread ends with the last one.
* **Journal** (tests, audits): with ``SPARKLOCK_JOURNAL=<dir>`` every grant (with ``waited_ns``)
  and release is written with its ``time.monotonic_ns()`` stamp, one JSON line each.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
import time
from collections.abc import Callable, Mapping

from ..config import SparkLockConfig
from ..errors import SparkLockError, UnlockError
from ..locks.model import LockMode, LockRequest, LockType, Owner, build_lock_set, exact_lock_set
from ..locks.objects import LockObject
from ..managers import HeldLocks, get_manager
from ..protocol.messages import (
    Acquired,
    ExplicitLockRequest,
    LockRow,
    ReadEpochs,
    ShowLocksRequest,
    UnlockRequest,
)
from ..rules.facts import Facts
from ..rules.policy import requests_for
from ..rules.query_text import lock_statement_summary, statement_text
from .cancellation import WaitRegistry
from .epochs import WriteEpochs
from .fencing import Fencer, Fencing, Revoker, unlocked_by
from .journal import Journal
from .release_retrier import ReleaseRetrier
from .unlock_policy import unlock_check


@functools.lru_cache(maxsize=64)
def _config(items: tuple[tuple[str, str], ...]) -> SparkLockConfig:
    return SparkLockConfig.from_conf(dict(items))


def config_of(conf: Mapping[str, str] | None) -> SparkLockConfig:
    """Parsed ``spark.sparklock.*`` settings of a session (cached: sessions rarely change them)."""
    return _config(tuple(sorted((conf or {}).items())))


class LockService:
    """Process-wide: one per Python driver, shared by every session and thread."""

    def __init__(self) -> None:
        self._held: dict[str, HeldLocks] = {}
        self._guard = threading.Lock()
        self._ids = itertools.count(1)
        self._waits = WaitRegistry()
        self._fencing = Fencing(is_running=lambda handle: self.held(handle) is not None)
        self._retrier = ReleaseRetrier()
        self._journal = Journal()
        self._epochs = WriteEpochs()
        #: Told of every LOCK TABLE grant (session, held, config): sparklock.servers uses it to
        #: release a closed session's explicit locks.
        self._explicit_observer: Callable[[str, HeldLocks, SparkLockConfig], None] | None = None
        #: Told of every renewal of a granted lease (pushed to the JVM, which fences on its own).
        self._lease_watchers: list[Callable[[int, int], None]] = []

    # -- implicit (statement) locks -----------------------------------------------------------
    def grant(self, facts: Facts) -> Acquired:
        """One statement's whole answer: its locks taken (the handle, how many, how long it
        waited), whether and what the JVM re-lists (write epochs of what it reads, read after
        the grant), and the lease the locks live under (its renewals then go to the lease
        watchers). The configuration is parsed once here and handed down."""
        config = config_of(facts.conf)
        handle, held = self._take(facts, config)
        epochs = self._read_epochs(facts, config) if config.refresh_listing else None
        term = self._lease(held)
        if held is not None and held.lost:  # that lease ended before the statement started
            self.release(handle)  # raises LOCKS_LOST
        return Acquired(
            handle=handle,
            refresh_listing=config.refresh_listing,
            lock_count=len(held.locks) if held is not None else 0,
            waited_ns=held.waited_ns if held is not None else None,
            read_epochs=epochs,
            lease_epoch=term[0] if term is not None else None,
            lease_until_ns=term[1] if term is not None else None,
        )

    def acquire(self, facts: Facts) -> str:
        """Lock one execution; returns the handle to release ('' when nothing is locked)."""
        return self._take(facts, config_of(facts.conf))[0]

    def add_lease_watcher(self, watcher: Callable[[int, int], None]) -> None:
        """``watcher(epoch, deadline_ns)`` at each renewal of a granted lease (must not block)."""
        if watcher not in self._lease_watchers:
            self._lease_watchers.append(watcher)

    def _lease(self, held: HeldLocks | None) -> tuple[int, int] | None:
        """The lease ``held`` was granted in (None: none the JVM enforces), watched from now on."""
        manager = held.manager if held is not None else None
        term = manager.held_lease(held) if manager is not None else None
        if term is not None:
            for watcher in self._lease_watchers:
                manager.watch_lease(watcher)
        return term

    def _removed_elsewhere(self, held: HeldLocks, lock_ids: set[str]) -> None:
        """Another client removed a lock guarding a write of ``held``: fenced as by UNLOCK."""
        with self._guard:
            running = [(h, x) for h, x in self._held.items() if x is held]
        self._fencing.removed_elsewhere(held, running, lock_ids)

    def _take(self, facts: Facts, config: SparkLockConfig) -> tuple[str, HeldLocks | None]:
        """The statement's locks: its handle ('' and None when nothing is locked)."""
        if not config.enabled:
            return "", None
        plan = requests_for(facts, config.escalation)
        if not plan.requests:
            return "", None
        session = facts.session or ""
        requests, owner = self._within_enclosing(plan.requests, session, facts)
        if not requests:
            return "", None
        query_id = self._query_id(session, facts.execution_id)
        query = facts.sql or plan.command
        text = statement_text(config.query_text, facts.sql, plan.command, plan.requests)
        scope = {"jobGroup": facts.job_group, "jobTags": facts.job_tags}  # as a LOCK request's
        asked = time.monotonic_ns()
        manager = get_manager(config)
        manager.watch_removals(self._removed_elsewhere)
        with self._waits.cancellable(session, scope) as cancel:
            held = manager.acquire_set(
                requests,
                owner=owner,
                query_id=query_id,
                query_string=text,
                max_query_length=config.query_text.max_length,
                settings=config.lock,
                cancel=cancel,
                client=facts.client_address or None,
                user=facts.user or "",
                agent=facts.agent or "",
            )
        granted = time.monotonic_ns()
        held.waited_ns = granted - asked  # asking for the locks until granted
        handle = f"{query_id}#{next(self._ids)}"
        with self._guard:
            self._held[handle] = held
        if self._journal.on:
            self._journal.record(
                {
                    "ev": "held",
                    "handle": handle,
                    "t": granted,
                    "waited_ns": held.waited_ns,
                    "session": session,
                    "root": facts.root_execution_id,
                    "execution": facts.execution_id,
                    "sql": str(query)[:200],
                    "locks": [[i.name, i.mode.value] for i in held.locks],
                }
            )
        fence = self._fencing.fence  # the moment the locks are lost, fence the statement
        held.on_lost(lambda h, handle=handle: fence(handle, h.lost_reason or "locks lost"))
        if held.lost:  # lost before the statement even started: fail it now, unrun
            self.release(handle)  # raises LOCKS_LOST
        return handle, held

    # -- cancellation ---------------------------------------------------------------------------
    def cancel_waits(
        self,
        *,
        session: str | None = None,
        group: str | None = None,
        tag: str | None = None,
        reason: str = "sparklock.cancel_waits()",
    ) -> int:
        """End the lock waits that match every given filter (none given: all); how many. Each
        gives up its place in line and fails with ``LOCK_WAIT_CANCELLED: cancelled by <reason>``
        (PySpark's job cancellations and Ctrl-C call it: ``sparklock.spark.callback``)."""
        return self._waits.cancel(session=session, group=group, tag=tag, reason=reason)

    def observe_explicit(
        self, observer: Callable[[str, HeldLocks, SparkLockConfig], None] | None
    ) -> None:
        """``observer(session, held, config)`` runs after every LOCK TABLE grant (None: stop)."""
        self._explicit_observer = observer

    def waiting(self) -> int:
        """Acquisitions in progress (waiting for or taking their locks)."""
        return len(self._waits)

    # -- fencing --------------------------------------------------------------------------------
    def add_fencer(self, fencer: Fencer) -> None:
        """``fencer(handle, reason)`` runs when a handle's locks are lost (once per handle)."""
        self._fencing.add(fencer)

    def remove_fencer(self, fencer: Fencer) -> None:
        self._fencing.remove(fencer)

    def add_revoker(self, revoker: Revoker) -> None:
        """``revoker(handle, reason)`` when an UNLOCK removed a running statement's locks."""
        self._fencing.add_revoker(revoker)

    def _within_enclosing(
        self, requests: list[LockRequest], session: str, facts: Facts
    ) -> tuple[list[LockRequest], Owner]:
        """A nested execution (saveAsTable → CTAS → insert) runs inside its parents' locks.

        What an enclosing execution already holds (same object, same or stronger mode) is not
        requested again, and its locks never block the nested one (they are the statement's own).
        """
        enclosing = [h for h in facts.enclosing_handles if h]
        needed = build_lock_set(requests)
        if not enclosing:
            return needed, Owner(session)
        with self._guard:
            held = [self._held[h] for h in enclosing if h in self._held]
        infos = [i for h in held for i in h.locks]
        strongest: dict[LockObject, LockMode] = {}
        for i in infos:
            if strongest.get(i.obj) is not LockMode.EXCLUSIVE:
                strongest[i.obj] = i.mode
        remaining = [
            r
            for r in needed
            if not (strongest.get(r.obj) is LockMode.EXCLUSIVE or strongest.get(r.obj) is r.mode)
        ]
        return remaining, Owner(session, frozenset(i.lock_id for i in infos))

    def release(self, handle: str) -> None:
        """Release a handle's locks (idempotent). Raises ``LOCKS_LOST`` when they were lost while
        held (the statement ran unprotected from then on: it must fail), ``UNLOCK_FAILED`` when
        they cannot be released (then retried in the background until they are gone)."""
        if not handle:
            return
        with self._guard:
            held = self._held.pop(handle, None)
        if held is None:
            return
        if self._journal.on:
            self._journal.record({"ev": "release", "handle": handle, "t": time.monotonic_ns()})
        written = held.exclusive_objects()  # before the locks go: a reader granted next sees it
        if written:
            self._epochs.written_objects(written)
        try:
            held.release()
        except UnlockError:
            self._retrier.add(handle, held)
            raise
        held.check()  # LOCKS_LOST if the session went while the statement held them

    def statement_handles(self) -> list[str]:
        with self._guard:  # the statements (implicit sets) holding locks now
            return [h for h, x in self._held.items() if x.lock_type is LockType.IMPLICIT]

    def unreleased(self) -> list[str]:
        """Handles whose release failed and is still being retried."""
        return self._retrier.handles()

    def retry_unreleased(self) -> int:
        """One retry of every failed release; how many are still unreleased."""
        return self._retrier.retry()

    # -- journal --------------------------------------------------------------------------------
    def set_journal(self, target: str | os.PathLike | Callable[[dict], None] | None) -> None:
        """Record grants and releases: to a callable, ``<dir>/journal-<pid>.jsonl``, or off."""
        self._journal.set_target(target)

    def held(self, handle: str) -> HeldLocks | None:
        with self._guard:
            return self._held.get(handle)

    def open_handles(self) -> int:  # statements holding locks (memory stays O(locks held))
        with self._guard:
            return len(self._held)

    def _read_epochs(self, facts: Facts, config: SparkLockConfig) -> ReadEpochs | None:
        """The write epochs of the tables a granted statement reads (:mod:`.epochs`), for the
        JVM to re-list only what changed since it listed; None when it re-lists nothing
        (``refreshListing=false``) or everything (``=all``)."""
        if not config.enabled or not config.refresh_listing or config.refresh_all:
            return None  # none: the JVM re-lists every file index read
        return self._epochs.answer(facts, get_manager(config).write_clock())

    def explain(self, facts: Facts) -> list[tuple[str, str]]:
        """The ``name, mode`` of each lock a statement would take, in acquisition order."""
        lock_set = build_lock_set(requests_for(facts).requests)
        return [(r.name, r.mode.value) for r in lock_set]

    # -- lock statements ----------------------------------------------------------------------
    def show_locks(self, request: ShowLocksRequest) -> list[LockRow]:
        """SHOW LOCKS: the locks on the request's object and below, waiting ones too."""
        config = config_of(request.conf)
        if not config.enabled:
            return []
        obj = request.object.lock_object() if request.object else None
        manager = get_manager(config)
        infos = manager.list_locks(obj, waiting=True)
        alive = manager.owners_alive(infos) if infos else []
        return [LockRow.of(i, a) for i, a in zip(infos, alive, strict=True)]

    def lock(self, request: ExplicitLockRequest) -> None:
        """LOCK TABLE / DATABASE: returns once granted (a no-op when disabled)."""
        named = _named_object(request, "LOCK")
        if named is None:
            return
        obj, config = named
        mode = LockMode.parse(str(request.mode or ""))
        session = request.session
        scope = {"jobGroup": request.job_group, "jobTags": request.job_tags or []}
        manager = get_manager(config)
        manager.watch_removals(self._removed_elsewhere)
        with self._waits.cancellable(session, scope) as cancel:
            held = manager.acquire_set(
                exact_lock_set([LockRequest(obj, mode)]),
                owner=session,
                query_id=self._query_id(session, "lock"),
                query_string=self._lock_text(config, request.sql, obj, mode),
                max_query_length=config.query_text.max_length,
                lock_type=LockType.EXPLICIT,
                settings=config.lock,
                cancel=cancel,
                client=request.client_address or None,
                user=request.user or "",
                agent=request.agent or "",
            )
        if self._explicit_observer is not None:
            self._explicit_observer(session, held, config)

    def unlock(self, request: UnlockRequest) -> None:
        """UNLOCK TABLE / DATABASE, if ``unlock.policy`` lets the asker (a no-op when disabled)."""
        named = _named_object(request, "UNLOCK")
        if named is None:
            return
        obj, config = named
        check = unlock_check(config.unlock, request.user, obj.name)
        self._epochs.written_objects([obj])  # conservative: even if refused
        explicit_only = config.unlock.scope == "explicit"
        removed = get_manager(config).unlock(obj, check=check, explicit_only=explicit_only)
        # Hive's rule frees the object; a statement of this process that held it is fenced
        with self._guard:
            running = list(self._held.items())
        statement = f"UNLOCK {obj.kind.name} {obj.name}"
        who = unlocked_by(
            statement, request.user, request.session, request.client_address, request.agent
        )
        self._fencing.revoke(running, {i.lock_id for i in removed}, who)

    @staticmethod
    def _lock_text(
        config: SparkLockConfig, sql: str | None, obj: LockObject, mode: LockMode
    ) -> str:
        """A LOCK statement's text in its lock data (``lock.queryString.mode``)."""
        summary = lock_statement_summary(obj, mode)
        if config.query_text.mode == "summary":
            return summary
        return sql or summary

    def _query_id(self, session: str, execution: object) -> str:
        stamp = time.strftime("%Y%m%d%H%M%S")
        return f"spark_{stamp}_{session[:8] or 'nosession'}_{execution}_{next(self._ids)}"


def _named_object(
    request: ExplicitLockRequest | UnlockRequest, statement: str
) -> tuple[LockObject, SparkLockConfig] | None:
    """The object a LOCK / UNLOCK request names (the JVM always resolves one) and the session's
    config; None when sparklock is disabled for the session (the statement is a no-op)."""
    if request.object is None:
        raise SparkLockError(f"LOCK_SERVICE_PROTOCOL: {statement} names no object")
    config = config_of(request.conf)
    if not config.enabled:
        return None
    return request.object.lock_object(), config
