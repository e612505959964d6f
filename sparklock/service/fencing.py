"""Fencing: stop a statement's Spark jobs the moment its locks are lost.

When a handle's locks are lost (ZooKeeper session expired) the registered fencers run at once;
the Spark callback's fencer asks the JVM to cancel the handle's jobs
(``SparkLockBridge.cancelFencedJobs``; the JVM owns the fence tag).

An UNLOCK that removes a running statement's locks (Hive's rule: the object is free) revokes
them: the registered revokers (the JVM's lease, ``SparkLockBridge.revokeLocks``) fence the
statement unless a commit of it already passed its check, so its commit is refused and it fails
with ``LOCKS_LOST`` naming who unlocked.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from ..locks.model import LockMode, LockType
from ..managers import HeldLocks

log = logging.getLogger("sparklock")

Fencer = Callable[[str, str], None]  # (handle, reason)
#: (handle, reason) -> "fenced", "committed" (its write is out: left running) or "unknown"
Revoker = Callable[[str, str], str]


#: Why a statement is fenced whose lock another client removed (``LockManager.watch_removals``).
REMOVED_ELSEWHERE = (
    "its lock was removed by another client of the lock service (an UNLOCK TABLE of another "
    "driver or server, `python -m sparklock release`, or Hive's UNLOCK)"
)


def unlocked_by(
    statement: str, user: str | None, session: str, client: str | None, agent: str | None
) -> str:
    """Who removed the locks, as a fenced statement's LOCKS_LOST names them."""
    where = ", ".join(
        p
        for p in (
            f"session {session or '?'}",
            f"client {client}" if client else "",
            f"agent {agent}" if agent else "",
        )
        if p
    )
    return f"its locks were removed by {statement} of user {user or '?'} ({where})"


class Fencing:
    """The registered fencers, run for a handle whose statement is still running.

    ``is_running(handle)`` tells whether the handle's statement still runs: once it has ended
    (released, or kept only for the release retry) its fence tag may sit on a thread that now
    runs other work, so it is not fenced."""

    def __init__(self, is_running: Callable[[str], bool]) -> None:
        self._is_running = is_running
        self._guard = threading.Lock()
        self._fencers: list[Fencer] = []
        self._revokers: list[Revoker] = []

    def add_revoker(self, revoker: Revoker) -> None:
        with self._guard:
            if revoker not in self._revokers:
                self._revokers.append(revoker)

    def revoke(
        self, running: Iterable[tuple[str, HeldLocks]], removed: set[str], reason: str
    ) -> list[str]:
        """Fence each running statement that held one of the ``removed`` lock ids (an UNLOCK
        took them), unless a revoker answers that its commit is already out; the fenced
        handles."""
        with self._guard:
            revokers = list(self._revokers)
        fenced = []
        for handle, held in running:
            if held.lock_type is not LockType.IMPLICIT or held.lost:
                continue
            if not _protected_a_write(held, removed):
                continue
            answers = set()
            for revoke in revokers:
                try:
                    answers.add(revoke(handle, reason))
                except Exception:  # the JVM gone: Python's fence below still holds
                    log.exception("sparklock: revoking %s failed", handle)
            if "committed" in answers:
                log.warning(
                    "sparklock: %s; %s had already committed: left to finish", reason, handle
                )
                continue
            held.mark_lost(reason)  # the fencers cancel its jobs; its release says LOCKS_LOST
            fenced.append(handle)
        return fenced

    def removed_elsewhere(
        self, held: HeldLocks, running: list[tuple[str, HeldLocks]], removed: set[str]
    ) -> None:
        """Another client removed lock ids of ``held``: as :meth:`revoke`; a set not yet handed
        to its statement (``running`` empty) is marked lost, so the statement fails as it starts."""
        if not running and not held.released:
            held.mark_lost(REMOVED_ELSEWHERE)
        self.revoke(running, removed, REMOVED_ELSEWHERE)

    def add(self, fencer: Fencer) -> None:
        with self._guard:
            if fencer not in self._fencers:
                self._fencers.append(fencer)

    def remove(self, fencer: Fencer) -> None:
        with self._guard:
            if fencer in self._fencers:
                self._fencers.remove(fencer)

    def fence(self, handle: str, reason: str) -> None:
        """Run every fencer for ``handle`` (one failing does not stop the others)."""
        if not self._is_running(handle):
            return
        with self._guard:
            fencers = list(self._fencers)
        log.error("sparklock: fencing %s (%s)", handle, reason)
        for f in fencers:
            try:
                f(handle, reason)
            except Exception:  # one fencer failing must not stop the others
                log.exception("sparklock: fencer failed for %s", handle)


def _protected_a_write(held: HeldLocks, removed: set[str]) -> bool:
    """Whether an UNLOCK that took the lock ids ``removed`` left a write of ``held`` open to
    another writer: it took one of its EXCLUSIVE locks, or a SHARED one on what it writes or an
    ancestor of it (a table's SHARED lock is what keeps a whole-table writer out of a partition
    being written). A SHARED lock only on what the statement reads leaves its writes protected:
    it goes on, as a reader does."""
    taken = [i for i in held.locks if i.lock_id in removed]
    if not taken:
        return False
    if any(i.mode is LockMode.EXCLUSIVE for i in taken):
        return True
    writes = held.exclusive_objects()
    return any(i.obj == w or i.obj.is_ancestor_of(w) for i in taken for w in writes)
