"""The lock-manager interface and the acquisition loop both managers share.

A manager stores locks and answers the grant rule for one object set; this module owns the policy
around it: the lock-set order, the ``retry`` loop (Hive's), the budget, cancellation, the logging of
what a statement waits for, and the ``LOCK_CONFLICT`` error.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import LockConflictError, LockWaitCancelledError, SparkLockError
from ..locks.model import (  # noqa: F401  (LockMode re-exported for managers)
    MAX_QUERY_LENGTH,
    LockData,
    LockInfo,
    LockMode,
    LockRequest,
    LockSettings,
    LockType,
    WaitPolicy,
    build_lock_set,
    exact_lock_set,
)
from ..locks.objects import LockObject
from ..locks.waiting import waiting_row
from .held import HeldLocks, Refusal
from .wait_log import WaitReporter

log = logging.getLogger("sparklock")


class AcquisitionCancelled(LockWaitCancelledError):
    """The statement was cancelled while it waited for its locks; nothing is held."""

    def __init__(self, object_name: str) -> None:
        super().__init__(f"cancelled while waiting for a lock on {object_name}")


def local_client_address() -> str:
    """The client field of the lock data (Hive writes the client's IP address)."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


#: What :meth:`LockManager.lease_until` answers for locks that cannot lapse while this process
#: lives (embedded: they live in it).
NEVER_LAPSES = math.inf


class LockManager(ABC):
    """The port: everything the service asks of a backend. Stores locks; a backend implements
    one attempt (``retry`` policy), a queued wait, release, listing and UNLOCK, and answers
    for its write clock, its lease and its leftovers. Its registry entry
    (:class:`~.backend.Backend`) carries its settings section and command-line needs."""

    kind = "abstract"

    def __init__(self, settings: LockSettings | None = None) -> None:
        self.settings = settings or LockSettings()
        self.client_address = local_client_address()
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (the service then stops retrying releases through it)."""
        return self._closed

    # -- the public API -----------------------------------------------------------------------
    def acquire(
        self,
        requests: Iterable[LockRequest],
        *,
        owner: str,
        query_id: str,
        lock_type: LockType = LockType.IMPLICIT,
        **kw: Any,
    ) -> HeldLocks:
        """Build the lock set of ``requests`` and take it (tools and tests; the service builds
        its statements' sets itself and calls :meth:`acquire_set`).

        Implicit sets get SHARED on every ancestor; explicit ones (LOCK TABLE) lock exactly the
        objects named. The keywords are :meth:`acquire_set`'s.
        """
        if lock_type is LockType.IMPLICIT:
            lock_set = build_lock_set(requests)
        else:
            lock_set = exact_lock_set(requests)
        return self.acquire_set(lock_set, owner=owner, query_id=query_id, lock_type=lock_type, **kw)

    def acquire_set(
        self,
        lock_set: Sequence[LockRequest],
        *,
        owner: str,
        query_id: str,
        query_string: str = "",
        lock_type: LockType = LockType.IMPLICIT,
        settings: LockSettings | None = None,
        cancel: threading.Event | None = None,
        client: str | None = None,
        user: str = "",
        max_query_length: int = MAX_QUERY_LENGTH,
        agent: str = "",
    ) -> HeldLocks:
        """Take a built lock set (``locks.model.build_lock_set`` / ``exact_lock_set``: complete
        and in the global order) all-or-nothing, within the settings' budget.

        ``client`` (default: this host's address), ``user`` and ``agent`` (the Spark app id or
        server session) go into the lock data. Raises :class:`LockConflictError` (nothing held)
        when the budget runs out.
        """
        settings = settings or self.settings
        data = LockData.now(
            query_id,
            lock_type,
            query_string,
            client or self.client_address,
            max_query_length=max_query_length,  # spark.sparklock.lock.queryString.maxLength
            user=user,
            agent=agent,
            owner=owner,  # another driver's wait-for graph names this lock's holder by it
        )
        if not lock_set:
            return HeldLocks(owner, query_id, lock_type, [], self)
        if agent and self._register_agent(agent):  # its locks say its life can be told
            data = dataclasses.replace(data, presence=True)
        waiter = WaitReporter(query_id, settings)
        try:
            if settings.wait_policy is WaitPolicy.QUEUE:
                held = self._acquire_queued(lock_set, data, owner, settings, cancel, waiter)
            else:
                held = self._acquire_retrying(lock_set, data, owner, settings, cancel, waiter)
        except SparkLockError as e:
            waiter.refused(e)
            raise
        held.manager = self
        waiter.granted(held)
        return held

    def _acquire_retrying(
        self,
        lock_set: Sequence[LockRequest],
        data: LockData,
        owner: str,
        settings: LockSettings,
        cancel: threading.Event | None,
        waiter: WaitReporter,
    ) -> HeldLocks:
        refusal: Refusal | None = None
        shown: object | None = None  # the manager's token of this request's WAITING row
        try:
            for attempt in range(1, settings.num_retries + 1):
                outcome = self._attempt(lock_set, data, owner)
                if isinstance(outcome, HeldLocks):
                    return outcome
                refusal = outcome
                waiter.waiting(refusal, attempt)
                if attempt < settings.num_retries:
                    if not data.wait_since_ms:  # later attempts' locks say since when it waited
                        data = dataclasses.replace(data, wait_since_ms=int(time.time() * 1000))
                    row = waiting_row(
                        LockInfo(refusal.request.obj, refusal.request.mode, data, owner=owner),
                        refusal.holders,
                    )
                    shown = self._show_waiting(shown, row)
                    self._check_deadlock(owner, data.query_id, refusal, data.wait_since_ms)
                    if _sleep(settings.retry_interval, cancel):
                        raise AcquisitionCancelled(refusal.request.name)
        finally:
            if shown is not None:
                self._hide_waiting(shown)
            if refusal is not None:
                self._end_wait(owner, data.query_id)
        assert refusal is not None
        raise conflict_error(refusal, settings.num_retries, waiter.elapsed())

    def _show_waiting(self, shown: object | None, row: LockInfo) -> object | None:
        """Make a ``retry`` request visible while it sleeps between attempts (SHOW LOCKS lists
        ``row``, a WAITING row); ``shown`` is what the previous call returned (None at first).
        Returns a token for the next call and :meth:`_hide_waiting`. Best effort: a request
        that cannot be shown still waits. Default: not shown."""
        return None

    def _hide_waiting(self, shown: object) -> None:
        """The request was granted, refused or cancelled: its WAITING row goes."""
        return None

    def _check_deadlock(self, owner: str, query_id: str, refusal: Refusal, since_ms: int) -> None:
        """Between two ``retry`` attempts: raise :class:`~sparklock.errors.DeadlockError` if
        the statement waits in a cycle (:mod:`sparklock.locks.wait_for`) and is its victim.
        ``refusal`` names what refused it this attempt, ``since_ms`` since when it waits.
        Default: no detection."""
        return None

    def _register_agent(self, agent: str) -> bool:
        """Before ``agent`` (an application or server session) takes locks: say where others
        can see it that it lives (:meth:`owners_alive`). True when its presence is registered
        now: only then do its locks say so, and only such a lock's owner can ever be found
        gone. Default: nobody else can see them (False)."""
        return False

    def owners_alive(self, infos: Sequence[LockInfo]) -> list[bool | None]:
        """Per lock, whether its owner still lives: True, False, or None when it cannot be
        told (a lock of a Hive client, older data). Default: unknown."""
        return [None] * len(infos)

    def _end_wait(self, owner: str, query_id: str) -> None:
        """The ``retry`` request that waited is granted, refused or cancelled: whatever
        :meth:`_check_deadlock` published for it goes. Default: nothing published."""
        return None

    @abstractmethod
    def _attempt(
        self, lock_set: Sequence[LockRequest], data: LockData, owner: str
    ) -> HeldLocks | Refusal:
        """One all-or-nothing try of the whole set; on refusal nothing of it stays held."""

    @abstractmethod
    def _acquire_queued(
        self,
        lock_set: Sequence[LockRequest],
        data: LockData,
        owner: str,
        settings: LockSettings,
        cancel: threading.Event | None,
        waiter: WaitReporter,
    ) -> HeldLocks:
        """Fair acquisition: keep the place in line; raise LockConflictError at the deadline."""

    def check_reachable(self) -> None:
        """Connect now (a session's start checks it): LockManagerUnavailableError naming the
        address and the cause when the lock service cannot be reached. In-process managers
        are always reachable."""
        return None

    @abstractmethod
    def release(self, held: HeldLocks) -> None:
        """Release every lock of ``held`` (idempotent); report what cannot be released."""

    @abstractmethod
    def list_locks(
        self, obj: LockObject | None = None, *, descendants: bool = True, waiting: bool = False
    ) -> list[LockInfo]:
        """Current locks (all, or on ``obj`` and below it), in SHOW LOCKS order, each with its
        state (a request waiting in line is WAITING). ``waiting`` adds the ``retry`` requests
        sleeping between attempts (:meth:`_show_waiting`), which hold no lock."""

    @abstractmethod
    def unlock(
        self,
        obj: LockObject,
        *,
        check: Callable[[Sequence[LockInfo]], None] | None = None,
        explicit_only: bool = False,
    ) -> list[LockInfo]:
        """Remove every granted lock on exactly ``obj``, whoever holds it (Hive's UNLOCK); only
        the EXPLICIT ones (LOCK TABLE's) with ``explicit_only`` (``unlock.scope=explicit``);
        NotLockedError if none. Requests waiting in line for ``obj`` keep their place: they hold
        nothing yet, and removing them would send their statements to the back of the line.

        ``check`` sees exactly the locks about to be removed and may refuse by raising (nothing
        is removed then): ``spark.sparklock.unlock.policy=owner``."""

    # -- what the service asks besides locks ----------------------------------------------------
    def write_clock(self) -> str | None:
        """A reading that changes whenever a writer outside this process may have written
        (``service.epochs``: listings made under another reading are listed again); None when
        it cannot be read (everything read is listed again). Compared for equality only, with
        readings of the same manager. Default: unknown."""
        return None

    def lease_until(self) -> float:
        """Until when (``time.monotonic()`` seconds) the locks this manager holds for this
        process are certainly still held, whatever happens from now on: work under them may
        go on until then without asking again. :data:`NEVER_LAPSES` for locks that live as long
        as the process. Default: now (no promise beyond this moment)."""
        return time.monotonic()

    def lease_term(self) -> tuple[int, int] | None:
        """The lease the driver's JVM enforces on its own (jvm-shim ``Lease``): ``(epoch,
        deadline)``, the session the locks belong to and until when (``time.monotonic_ns()``) they
        are certainly held. None: the JVM does not enforce one (locks that cannot lapse, or a
        backend that fences from Python only). Default: None."""
        return None

    def held_lease(self, held: HeldLocks) -> tuple[int, int] | None:
        """The lease the JVM binds ``held``'s statement to: the term of the epoch it was
        granted under (``held.lease_epoch``). A set granted under an epoch that has ended
        meanwhile (a session expired between the grant and now) gets that epoch with a
        deadline already passed, and is marked lost: it must not live under a later epoch.
        Default: :meth:`lease_term` when it is the set's epoch."""
        term = self.lease_term()
        if term is None or held.lease_epoch is None or term[0] == held.lease_epoch:
            return term
        held.mark_lost(
            f"the session it was granted in ({held.lease_epoch:#x}) ended before it started"
        )
        return (held.lease_epoch, 0)

    def watch_lease(self, listener: Callable[[int, int], None]) -> None:
        """Call ``listener(epoch, deadline)`` at every renewal of :meth:`lease_term` (on a
        connection thread: it must not block; idempotent). Default: nothing renews."""
        return None

    def watch_removals(self, listener: Callable[[HeldLocks, set[str]], None]) -> None:
        """``listener(held, lock_ids)`` when another client removes a lock that protects a write
        of a granted statement of this process (an UNLOCK elsewhere). Managers that cannot see
        that (the default) never call it; their statement learns it at its release."""
        return None

    # -- maintenance (python -m sparklock stale) -------------------------------------------------
    def remove_locks(self, infos: Sequence[LockInfo]) -> list[str]:
        """Force-remove exactly these locks (the operator's sweep of stale explicit locks);
        returns the ids of those that could not be removed. Default: each object's locks
        through :meth:`unlock`, only when they are exactly ``infos``."""
        failed: list[str] = []
        by_object: dict[LockObject, set[str]] = {}
        for info in infos:
            by_object.setdefault(info.obj, set()).add(info.lock_id)

        for obj, ids in by_object.items():

            def exactly(found: Sequence[LockInfo], ids: set[str] = ids) -> None:
                if {i.lock_id for i in found} != ids:
                    raise SparkLockError("other locks on the object meanwhile")

            try:
                self.unlock(obj, check=exactly)
            except SparkLockError:
                failed.extend(sorted(ids))
        return failed

    def leftovers(self) -> list[str]:
        """Storage the backend keeps without locks in it (ZooKeeper's empty object nodes, which
        Hive leaves too): what the operator's sweep lists. Default: none."""
        return []

    def remove_leftovers(self, found: Iterable[str]) -> list[str]:
        """Remove what :meth:`leftovers` found, each only if still unused; returns what was
        removed."""
        return []

    def close(self) -> None:
        """Release what the manager holds open (connections); held locks are not touched."""
        self._closed = True


def conflict_error(refusal: Refusal, attempts: int, waited: float) -> LockConflictError:
    return LockConflictError(
        refusal.request.name, refusal.request.mode.value, attempts, waited, refusal.holders
    )


def _sleep(seconds: float, cancel: threading.Event | None) -> bool:
    """Sleep; True if cancelled meanwhile."""
    if cancel is None:
        time.sleep(seconds)
        return False
    return cancel.wait(seconds)


__all__ = [
    "NEVER_LAPSES",
    "AcquisitionCancelled",
    "HeldLocks",
    "LockManager",
    "LockMode",
    "Refusal",
    "conflict_error",
]
