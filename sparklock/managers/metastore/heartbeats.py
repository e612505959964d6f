"""Heartbeats and leases of the metastore lock requests this process holds.

The metastore expires a lock request whose last heartbeat is older than its
``metastore.txn.timeout`` (its housekeeper, every few seconds). A sender thread heartbeats each
request every ``interval``; a watchdog thread fences a request whose heartbeats stopped being
answered (metastore down, network cut, process paused) before the metastore can expire it:

    lease deadline = send time of the last answered heartbeat + timeout - margin

The send time, not the answer time: the metastore stamped the heartbeat somewhere in between,
so its expiry is never earlier than that. Fencing is ``HeldLocks.mark_lost``: the statement's
next check fails instead of writing without its locks.

The driver's JVM enforces the same deadline on its own (jvm-shim ``lease.Lease``), so that a
stalled Python, which sends no heartbeat and fences nothing, cannot leave the JVM writing. A
granted set gets a *term*: an epoch of its own and the requests it lives under (its own, and the
session's LOCK TABLE requests that cover what it did not send); the term's deadline is the
earliest of theirs, pushed to the listeners (the JVM) whenever one of them is renewed.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..base import HeldLocks
from . import wire
from .client import MetastoreClient

log = logging.getLogger("sparklock")

#: ``listener(epoch, deadline_ns)``: a term renewed (on the heartbeat thread: must not block).
TermListener = Callable[[int, int], None]

#: Term epochs, process-wide and negative: two managers (two metastores) never share one, and
#: none is a ZooKeeper session id (positive, or far below these for server ids above 127).
_epochs = itertools.count(1)


@dataclass(eq=False)
class Term:
    """The lease a granted set lives under, as the JVM sees it: the requests it depends on."""

    epoch: int
    lockids: tuple[int, ...]
    held: HeldLocks


@dataclass(eq=False)
class Lease:
    """One lock request kept alive: its id, since when it is safe, who to fence."""

    lockid: int
    answered: float  # monotonic send time of the last answered heartbeat (or of the lock call)
    held: HeldLocks | None = None  # None while the request still waits in line
    last_sent: float = 0.0
    lost: str | None = field(default=None, repr=False)


class Heartbeats:
    """The sender and the watchdog, started with the first lease, stopped by :meth:`close`."""

    def __init__(
        self,
        client: MetastoreClient,
        timeout: Callable[[], float],
        interval: float | None,
        margin: float | None,
    ) -> None:
        self.client = client
        self._timeout = timeout
        self._interval = interval
        self._margin = margin
        self._leases: dict[int, Lease] = {}
        self._terms: dict[int, Term] = {}
        self._listeners: list[TermListener] = []
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- timing (the metastore's timeout is asked for once, on first use) ----------------------
    @property
    def timeout(self) -> float:
        return self._timeout()

    @property
    def interval(self) -> float:
        return self._interval or self.timeout / 3

    @property
    def margin(self) -> float:
        return self._margin if self._margin is not None else max(1.0, self.timeout / 10)

    def deadline(self, lease: Lease) -> float:
        """When (monotonic) ``lease`` stops being safe to work under."""
        return lease.answered + self.timeout - self.margin

    def lease_until(self) -> float:
        """The earliest deadline of the live leases; now when there is none (a lost lease is
        no longer live: nothing is promised for it)."""
        with self._guard:
            deadlines = [self.deadline(x) for x in self._leases.values()]
        return min(deadlines, default=time.monotonic())

    # -- leases --------------------------------------------------------------------------------
    def add(self, lockid: int, sent_at: float) -> Lease:
        lease = Lease(lockid, sent_at, last_sent=sent_at)
        with self._guard:
            self._leases[lockid] = lease
            if not self._threads:
                self._start()
        return lease

    def attach(self, lockid: int, held: HeldLocks) -> None:
        """The request was granted: fence ``held`` if its heartbeats stop being answered."""
        with self._guard:
            lease = self._leases.get(lockid)
            if lease is not None:
                lease.held = held
                reason = lease.lost
        if lease is not None and reason:
            held.mark_lost(reason)

    def remove(self, lockid: int) -> None:
        """Request ``lockid`` is no longer kept alive (released, withdrawn, unlocked): statements
        that ran under it as their LOCK TABLE lock are no longer protected by it."""
        with self._guard:
            lease = self._leases.pop(lockid, None)
            dependents = self._dependents(lockid, lease.held if lease else None)
        for held in dependents:
            held.mark_lost(f"the LOCK TABLE lock it ran under (metastore request {lockid}) ended")

    def lease(self, lockid: int) -> Lease | None:
        with self._guard:
            return self._leases.get(lockid)

    # -- terms (the JVM's view) -------------------------------------------------------------
    def open_term(self, held: HeldLocks, lockids: tuple[int, ...]) -> int:
        """``held`` was granted and lives under the requests ``lockids``: its epoch."""
        term = Term(-next(_epochs), tuple(dict.fromkeys(lockids)), held)
        with self._guard:
            self._terms[term.epoch] = term
        return term.epoch

    def term(self, epoch: int) -> tuple[int, int] | None:
        """``(epoch, deadline ns)`` of a term; a deadline already passed when a request it lives
        under is no longer kept alive (lost, released); None for an unknown epoch."""
        with self._guard:
            term = self._terms.get(epoch)
            if term is None:
                return None
            return epoch, self._term_deadline(term)

    def close_term(self, epoch: int | None) -> None:
        """The set was released: its term is no longer renewed."""
        if epoch is not None:
            with self._guard:
                self._terms.pop(epoch, None)

    def add_listener(self, listener: TermListener) -> None:
        with self._guard:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def _term_deadline(self, term: Term) -> int:
        """The earliest deadline of the term's requests (ns); 0 when one is gone (guarded)."""
        leases = [self._leases.get(lockid) for lockid in term.lockids]
        if not leases or any(x is None or x.lost for x in leases):
            return 0
        return int(min(self.deadline(x) for x in leases if x is not None) * 1e9)

    def _renewed(self, lockid: int) -> None:
        """An answered heartbeat of ``lockid``: the terms living under it move on."""
        with self._guard:
            renewed = [
                (t.epoch, self._term_deadline(t))
                for t in self._terms.values()
                if lockid in t.lockids
            ]
            listeners = list(self._listeners)
        for epoch, deadline in renewed:
            if not deadline:
                continue
            for listener in listeners:
                try:
                    listener(epoch, deadline)
                except Exception:  # a listener must never stop the heartbeats
                    log.exception("sparklock: lease listener failed")

    def _dependents(self, lockid: int, held: HeldLocks | None) -> list[HeldLocks]:
        """Sets other than ``held`` living under request ``lockid`` (guarded)."""
        return [t.held for t in self._terms.values() if lockid in t.lockids and t.held is not held]

    def _start(self) -> None:
        for name, target in (("heartbeat", self._send_loop), ("lease", self._watch_loop)):
            t = threading.Thread(target=target, name=f"sparklock-metastore-{name}", daemon=True)
            t.start()
            self._threads.append(t)

    def close(self) -> None:
        self._stop.set()

    # -- the threads ---------------------------------------------------------------------------
    def _send_loop(self) -> None:
        while not self._stop.wait(min(self.interval / 4, 1.0)):
            now = time.monotonic()
            with self._guard:
                due = [x for x in self._leases.values() if now - x.last_sent >= self.interval]
            for lease in due:
                self._beat(lease)

    def _beat(self, lease: Lease) -> None:
        sent = time.monotonic()
        lease.last_sent = sent
        try:
            self.client.heartbeat(lease.lockid)
        except wire.ThriftError as e:  # NoSuchLock / aborted: the metastore dropped it
            self._lose(lease, f"the metastore no longer has lock request {lease.lockid} ({e})")
        except Exception as e:  # noqa: BLE001 - unanswered: the watchdog decides
            log.warning("sparklock: heartbeat of metastore lock %s failed: %s", lease.lockid, e)
        else:
            lease.answered = max(lease.answered, sent)
            self._renewed(lease.lockid)

    def _watch_loop(self) -> None:
        while not self._stop.wait(min(self.margin / 2, 0.5)):
            now = time.monotonic()
            with self._guard:
                expired = [x for x in self._leases.values() if now > self.deadline(x)]
            for lease in expired:
                quiet = now - lease.answered
                self._lose(
                    lease,
                    f"no heartbeat of metastore lock request {lease.lockid} answered for "
                    f"{quiet:.1f} s: fenced before the metastore's {self.timeout:.0f} s timeout "
                    "can expire it",
                )

    def _lose(self, lease: Lease, reason: str) -> None:
        with self._guard:
            if self._leases.get(lease.lockid) is not lease:
                return
            del self._leases[lease.lockid]
            lease.lost = reason
            held = lease.held
            dependents = self._dependents(lease.lockid, held)
        for h in ([held] if held is not None else []) + dependents:
            h.mark_lost(reason)
