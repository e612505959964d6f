"""The Python side of the bridge: what the JVM shim calls, as plain dicts.

It turns an execution's facts into a lock set (``policy``), takes it from the process-wide manager
for the session's configuration, keeps the handle until the JVM releases it, and answers the lock
statements (SHOW LOCKS, LOCK/UNLOCK, EXPLAIN LOCKS). No Spark import: tests drive it with dicts.

Reliability rules (nothing leaked, nothing unprotected):

* **Waits can be cancelled.** Every acquisition waits with a cancel ``Event`` registered under its
  session, job group and job tags (facts ``jobGroup``/``jobTags``); :meth:`LockService.cancel_waits`
  ends matching waits with ``LOCK_WAIT_CANCELLED`` (nothing held). ``sparklock.spark.callback``
  calls it from PySpark's ``cancelAllJobs``/``cancelJobGroup``/``cancelJobsWithTag``/
  ``interruptAll`` (and so from Ctrl-C, whose handler calls ``cancelAllJobs``).
* **Fencing.** When a handle's locks are lost (ZooKeeper session expired) the registered fencers
  run at once (the Spark callback cancels the jobs tagged :func:`fence_tag` of the handle), and the
  handle's release raises ``LOCKS_LOST``: a statement that lost its locks never reports success.
* **Release failures are reported and retried.** A release that still fails after
  ``spark.sparklock.unlock.numRetries`` raises ``UNLOCK_FAILED`` to the statement, and the handle is
  kept and retried in the background until its locks are gone (released, or dead with the
  session) -- see :meth:`LockService.unreleased`. The retrier gives a handle up (one WARNING)
  once retrying is pointless: its locks are lost (the session expired, or was presumed expired
  after a whole session timeout without a server, see ``zkclient``) or its manager was closed
  (``LockManager.close``, ``sparklock.managers.close_all``); the thread ends with the last one.
* **Journal** (tests, audits): with ``SPARKLOCK_JOURNAL=<dir>`` (or :meth:`LockService.set_journal`)
  every grant and release is written with its ``time.monotonic_ns()`` stamp, one JSON line each.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .config import SparkLockConfig
from .errors import SparkLockError, UnlockError
from .managers import AcquisitionCancelled, HeldLocks, get_manager
from .model import LockInfo, LockMode, LockRequest, LockType, Owner, build_lock_set
from .objects import LockObject
from .policy import requests_for

log = logging.getLogger("sparklock")

BASIC_COLUMNS = ["name", "mode"]
EXTENDED_COLUMNS = BASIC_COLUMNS + [
    "query_id",
    "lock_time",
    "lock_type",
    "query_string",
    "client",
    "user",
]


@functools.lru_cache(maxsize=64)
def _config(items: tuple[tuple[str, str], ...]) -> SparkLockConfig:
    return SparkLockConfig.from_conf(dict(items))


def config_of(conf: Mapping[str, str] | None) -> SparkLockConfig:
    """Parsed ``spark.sparklock.*`` settings of a session (cached: sessions rarely change them)."""
    return _config(tuple(sorted((conf or {}).items())))


def object_of(spec: Mapping[str, Any]) -> LockObject:
    """A lock object from the JVM's resolved ``{"database", "table", "partition"}``."""
    table = spec.get("table")
    partition = [(k, v) for k, v in spec.get("partition") or []]
    if table is None:
        return LockObject.of_database(spec["database"])
    return LockObject.of_partition(spec["database"], table, partition)


def info_row(info: LockInfo, extended: bool) -> list[str]:
    row = [info.name, info.mode.value]
    if extended:
        d = info.data
        row += [
            d.query_id,
            str(d.lock_time_ms),
            d.lock_type.value,
            d.query_string,
            d.client,
            d.user,
        ]
    return row


FENCE_TAG_PREFIX = "sparklock-"

#: How often handles whose release failed are retried in the background (seconds).
UNRELEASED_RETRY_INTERVAL = 1.0


def _pointless(held: HeldLocks) -> str | None:
    """Why retrying the release of ``held`` is pointless, or None while it is not.

    Lost locks are gone (their release is a no-op); a closed manager is not to be used any
    more (its connection goes with its last user)."""
    if held.lost:
        return f"its locks are lost: {held.lost_reason}"
    if held.manager is not None and held.manager.closed:
        return f"its {held.manager.kind} lock manager is closed"
    return None


def fence_tag(handle: str) -> str:
    """The Spark job tag the JVM puts on the jobs run while ``handle`` holds its locks.

    Same rule as ``LockGuard.fenceTag`` (job tags cannot contain a comma)."""
    return FENCE_TAG_PREFIX + handle.replace(",", "_")


class WaitCancelledError(AcquisitionCancelled):
    """A statement's lock wait was ended by a Spark cancellation; nothing of it is held."""

    def __init__(self, object_name: str, reason: str) -> None:
        SparkLockError.__init__(
            self, f"{self.code}: cancelled by {reason} while waiting for a lock on {object_name}"
        )


@dataclass
class _Wait:
    """One acquisition in progress, and what a cancellation must match to end it."""

    session: str
    group: str | None
    tags: frozenset[str]
    event: threading.Event = field(default_factory=threading.Event)
    reason: str = ""


Fencer = Callable[[str, str], None]  # (handle, reason)


class LockService:
    """Process-wide: one per Python driver, shared by every session and thread."""

    def __init__(self) -> None:
        self._held: dict[str, HeldLocks] = {}
        self._guard = threading.Lock()
        self._ids = itertools.count(1)
        self._waits: dict[int, _Wait] = {}
        self._fencers: list[Fencer] = []
        self._unreleased: dict[str, HeldLocks] = {}
        self._retrier: threading.Thread | None = None
        self._journal: Callable[[dict], None] | None = None
        #: Told of every LOCK TABLE grant (session, held, config): sparklock.servers uses it to
        #: release a closed session's explicit locks.
        self._explicit_observer: Callable[[str, HeldLocks, SparkLockConfig], None] | None = None
        journal_dir = os.environ.get("SPARKLOCK_JOURNAL")
        if journal_dir:
            self.set_journal(journal_dir)

    # -- implicit (statement) locks -----------------------------------------------------------
    def acquire(self, facts: Mapping[str, Any]) -> str:
        """Lock one execution; returns the handle to release ('' when nothing is locked)."""
        config = config_of(facts.get("conf"))
        if not config.enabled:
            return ""
        plan = requests_for(facts)
        if not plan.requests:
            return ""
        session = str(facts.get("session") or "")
        requests, owner = self._within_enclosing(plan.requests, session, facts)
        if not requests:
            return ""
        query_id = self._query_id(session, facts.get("executionId"))
        query = facts.get("sql") or plan.command
        with self._cancellable(session, facts) as cancel:
            held = get_manager(config).acquire(
                requests,
                owner=owner,
                query_id=query_id,
                query_string=str(query),
                settings=config.lock,
                cancel=cancel,
                with_ancestors=False,  # the lock set above already has them
                client=facts.get("clientAddress") or None,
                user=str(facts.get("user") or ""),
            )
        handle = f"{query_id}#{next(self._ids)}"
        with self._guard:
            self._held[handle] = held
        if self._journal is not None:
            self._write_journal(
                {
                    "ev": "held",
                    "handle": handle,
                    "t": time.monotonic_ns(),
                    "session": session,
                    "root": facts.get("rootExecutionId"),
                    "execution": facts.get("executionId"),
                    "sql": str(query)[:200],
                    "locks": [[i.name, i.mode.value] for i in held.locks],
                }
            )
        # Fencing: the moment the locks are lost, stop the statement's jobs.
        held.on_lost(lambda h, handle=handle: self._fence(handle, h.lost_reason or "locks lost"))
        if held.lost:  # lost before the statement even started: fail it now, unrun
            self.release(handle)  # raises LOCKS_LOST
        return handle

    # -- cancellation ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _cancellable(self, session: str, scope: Mapping[str, Any]) -> Iterator[threading.Event]:
        """A wait that :meth:`cancel_waits` can end: yields the manager's cancel event and turns
        the manager's cancellation into ``LOCK_WAIT_CANCELLED`` naming what cancelled it.

        ``scope`` carries the ``jobGroup`` / ``jobTags`` of the waiting thread (facts, or a LOCK
        TABLE request)."""
        wait = _Wait(
            session,
            scope.get("jobGroup") or None,
            frozenset(str(t) for t in scope.get("jobTags") or ()),
        )
        with self._guard:
            self._waits[id(wait)] = wait
        try:
            yield wait.event
        except AcquisitionCancelled as e:
            name = str(e).rsplit(" lock on ", 1)[-1]
            raise WaitCancelledError(name, wait.reason or "a cancellation") from None
        finally:
            with self._guard:
                self._waits.pop(id(wait), None)

    def cancel_waits(
        self,
        *,
        session: str | None = None,
        group: str | None = None,
        tag: str | None = None,
        reason: str = "sparklock.cancel_waits()",
    ) -> int:
        """End the lock waits that match every given filter (none given: all of them).

        A matching acquisition gives up its place in line, holds nothing and fails with
        ``LOCK_WAIT_CANCELLED: cancelled by <reason> ...``. Returns how many waits were ended.
        """
        with self._guard:
            waits = list(self._waits.values())
        count = 0
        for w in waits:
            if session is not None and w.session != session:
                continue
            if group is not None and w.group != group:
                continue
            if tag is not None and tag not in w.tags:
                continue
            if not w.event.is_set():
                w.reason = reason
                w.event.set()
                count += 1
        if count:
            log.info("sparklock: %s ended %d lock wait(s)", reason, count)
        return count

    def observe_explicit(
        self, observer: Callable[[str, HeldLocks, SparkLockConfig], None] | None
    ) -> None:
        """``observer(session, held, config)`` runs after every LOCK TABLE grant (None: stop)."""
        self._explicit_observer = observer

    def waiting(self) -> int:
        """Acquisitions in progress (waiting for or taking their locks)."""
        with self._guard:
            return len(self._waits)

    # -- fencing --------------------------------------------------------------------------------
    def add_fencer(self, fencer: Fencer) -> None:
        """``fencer(handle, reason)`` runs when a handle's locks are lost (once per handle)."""
        with self._guard:
            if fencer not in self._fencers:
                self._fencers.append(fencer)

    def remove_fencer(self, fencer: Fencer) -> None:
        with self._guard:
            if fencer in self._fencers:
                self._fencers.remove(fencer)

    def _fence(self, handle: str, reason: str) -> None:
        with self._guard:
            if handle not in self._held:
                # its statement has ended (released, or kept only for the release retry): its
                # fence tag may sit on a thread that now runs other work
                return
            fencers = list(self._fencers)
        log.error("sparklock: fencing %s (%s)", handle, reason)
        for f in fencers:
            try:
                f(handle, reason)
            except Exception:  # one fencer failing must not stop the others
                log.exception("sparklock: fencer failed for %s", handle)

    def _within_enclosing(
        self, requests: list[LockRequest], session: str, facts: Mapping[str, Any]
    ) -> tuple[list[LockRequest], Owner]:
        """A nested execution (saveAsTable → CTAS → insert) runs inside its parents' locks.

        What an enclosing execution already holds (same object, same or stronger mode) is not
        requested again, and its locks never block the nested one (they are the statement's own).
        """
        enclosing = [h for h in facts.get("enclosingHandles") or [] if h]
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
        """Release a handle's locks; unknown or already released handles are fine (idempotent).

        Raises ``LOCKS_LOST`` when the locks were lost while held (the statement ran unprotected
        from then on, so it must fail), ``UNLOCK_FAILED`` when they cannot be released (the handle
        is then retried in the background until its locks are gone).
        """
        if not handle:
            return
        with self._guard:
            held = self._held.pop(handle, None)
        if held is None:
            return
        if self._journal is not None:
            self._write_journal({"ev": "release", "handle": handle, "t": time.monotonic_ns()})
        try:
            held.release()
        except UnlockError:
            with self._guard:
                self._unreleased[handle] = held
            self._start_retrier()
            raise
        held.check()  # LOCKS_LOST if the session went while the statement held them

    def unreleased(self) -> list[str]:
        """Handles whose release failed and is still being retried."""
        with self._guard:
            return sorted(self._unreleased)

    def retry_unreleased(self) -> int:
        """One retry of every failed release; returns how many are still unreleased.

        Handles for which retrying is pointless (:func:`_pointless`) are dropped, with one
        WARNING naming them and why.
        """
        with self._guard:
            pending = list(self._unreleased.items())
        given_up: list[str] = []
        for handle, held in pending:
            why = _pointless(held)
            if why is None:
                try:
                    held.release()
                except SparkLockError as e:
                    log.debug("sparklock: releasing %s again failed: %s", handle, e)
                    continue
                except Exception:
                    log.exception("sparklock: releasing %s again failed", handle)
                    continue
                why = _pointless(held)  # lost while we tried: the release was a no-op
                if why is None:
                    log.warning("sparklock: the locks of %s are released now", handle)
            if why is not None:
                given_up.append(f"{handle} ({why})")
            with self._guard:
                self._unreleased.pop(handle, None)
        if given_up:
            log.warning("sparklock: gave up releasing %s", "; ".join(given_up))
        with self._guard:
            return len(self._unreleased)

    def _start_retrier(self) -> None:
        with self._guard:
            if self._retrier is not None and self._retrier.is_alive():
                return
            self._retrier = threading.Thread(
                target=self._retry_loop, name="sparklock-unlock-retry", daemon=True
            )
            self._retrier.start()

    def _retry_loop(self) -> None:
        while True:
            time.sleep(UNRELEASED_RETRY_INTERVAL)
            if self.retry_unreleased() == 0:
                with self._guard:
                    if not self._unreleased:
                        self._retrier = None
                        return

    # -- journal --------------------------------------------------------------------------------
    def set_journal(self, target: str | os.PathLike | Callable[[dict], None] | None) -> None:
        """Record every grant and release: a callable gets the records, a directory gets
        ``journal-<pid>.jsonl``; None stops recording."""
        if target is None or callable(target):
            self._journal = target
            return
        os.makedirs(target, exist_ok=True)
        path = os.path.join(os.fspath(target), f"journal-{os.getpid()}.jsonl")
        lock = threading.Lock()

        def write(record: dict) -> None:
            line = json.dumps(record, separators=(",", ":")) + "\n"
            with lock, open(path, "a", encoding="utf-8") as f:
                f.write(line)

        self._journal = write

    def _write_journal(self, record: dict) -> None:
        journal = self._journal
        if journal is None:
            return
        record.setdefault("pid", os.getpid())
        try:
            journal(record)
        except Exception:
            log.exception("sparklock: writing the journal failed")

    def held(self, handle: str) -> HeldLocks | None:
        with self._guard:
            return self._held.get(handle)

    def open_handles(self) -> int:
        """Statements currently holding locks (memory stays O(locks held))."""
        with self._guard:
            return len(self._held)

    def explain(self, facts: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The ``name, mode`` rows a statement would take, in acquisition order."""
        lock_set = build_lock_set(requests_for(facts).requests)
        return [(r.name, r.mode.value) for r in lock_set]

    # -- lock statements ----------------------------------------------------------------------
    def command(self, request: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
        statement = request.get("statement")
        config = config_of(request.get("conf"))
        if statement == "SHOW_LOCKS":
            extended = bool(request.get("extended"))
            columns = EXTENDED_COLUMNS if extended else BASIC_COLUMNS
            if not config.enabled:
                return columns, []
            spec = request.get("object")
            obj = object_of(spec) if spec else None
            infos = get_manager(config).list_locks(obj)
            return columns, [info_row(i, extended) for i in infos]
        if statement == "LOCK":
            if config.enabled:
                obj = object_of(request["object"])
                mode = LockMode.parse(str(request.get("mode", "")))
                session = str(request.get("session") or "")
                with self._cancellable(session, request) as cancel:
                    held = get_manager(config).acquire(
                        [LockRequest(obj, mode)],
                        owner=session,
                        query_id=self._query_id(session, "lock"),
                        query_string=str(request.get("sql") or f"LOCK {obj.name} {mode.value}"),
                        lock_type=LockType.EXPLICIT,
                        settings=config.lock,
                        cancel=cancel,
                        client=request.get("clientAddress") or None,
                        user=str(request.get("user") or ""),
                    )
                if self._explicit_observer is not None:
                    self._explicit_observer(session, held, config)
            return [], []
        if statement == "UNLOCK":
            if config.enabled:
                get_manager(config).unlock(object_of(request["object"]))
            return [], []
        raise SparkLockError(f"UNSUPPORTED_STATEMENT: {statement!r}")

    def _query_id(self, session: str, execution: object) -> str:
        stamp = time.strftime("%Y%m%d%H%M%S")
        return f"spark_{stamp}_{session[:8] or 'nosession'}_{execution}_{next(self._ids)}"


_service: LockService | None = None
_service_lock = threading.Lock()


def get_service() -> LockService:
    global _service
    with _service_lock:
        if _service is None:
            _service = LockService()
        return _service
