"""What a waiting statement tells the log: at INFO once when it starts waiting, then every few
seconds, and once granted after waiting; at WARN once it has waited
``spark.sparklock.lock.waitWarnInterval`` and after each further such period, naming whom it
waits for (a server's operator sees who blocks whom without asking). Both wait policies of every
manager report through it; a manager that sleeps on a condition wakes up for the next WARN line
(:meth:`WaitReporter.until_warning`)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..locks.model import LockSettings
from . import recent_waits

if TYPE_CHECKING:
    from .held import HeldLocks, Refusal

log = logging.getLogger("sparklock")

#: How often a waiting statement logs what it waits for (seconds).
WAIT_LOG_INTERVAL = 5.0


class WaitReporter:
    """Logs what a statement waits for: once when it starts waiting, then every few seconds."""

    def __init__(self, query_id: str, settings: LockSettings) -> None:
        self.query_id = query_id
        self.settings = settings
        self.start = time.monotonic()
        self.last_log = 0.0
        self.waited = False
        self.next_warning = settings.wait_warn_interval  # seconds into the wait
        self.refusal: Refusal | None = None  # the last one: what the wait is for

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def until_warning(self) -> float:
        """Seconds until the next WARN line is due (inf when they are off)."""
        if self.settings.wait_warn_interval <= 0:
            return float("inf")
        return max(0.0, self.next_warning - self.elapsed())

    def waiting(self, refusal: Refusal, attempt: int | None = None) -> None:
        self.refusal = refusal
        now = time.monotonic()
        warn = 0 < self.settings.wait_warn_interval <= now - self.start
        warn = warn and now - self.start >= self.next_warning
        if self.waited and now - self.last_log < WAIT_LOG_INTERVAL and not warn:
            return
        self.waited = True
        self.last_log = now
        holders = "; ".join(h.describe() for h in refusal.holders) or "unknown holder"
        where = f"attempt {attempt}/{self.settings.num_retries}" if attempt else "queued"
        if warn:
            interval = self.settings.wait_warn_interval
            while self.next_warning <= now - self.start:
                self.next_warning += interval
            log.warning(
                "sparklock: query %s has waited %.1f s for %s lock on %s (%s, %.1f s budget); "
                "waits for %s",
                self.query_id,
                now - self.start,
                refusal.request.mode.value,
                refusal.request.name,
                where,
                self.settings.budget,
                holders,
            )
            return
        log.info(
            "sparklock: query %s waits for %s lock on %s (%s, %.1f s of %.1f s budget); held by %s",
            self.query_id,
            refusal.request.mode.value,
            refusal.request.name,
            where,
            now - self.start,
            self.settings.budget,
            holders,
        )

    def granted(self, held: HeldLocks) -> None:
        if self.waited:
            self._remember("GRANTED")
            log.info(
                "sparklock: query %s got its %d locks after %.3f s",
                self.query_id,
                len(held.locks),
                self.elapsed(),
            )

    def refused(self, error: Exception) -> None:
        """The acquisition failed (out of budget, cancelled, ...): kept for the Locks tab."""
        self._remember(getattr(error, "code", type(error).__name__), str(error))

    def _remember(self, outcome: str, error: str = "") -> None:
        r = self.refusal
        recent_waits.record(
            query_id=self.query_id,
            outcome=outcome,
            obj=r.request.name if r is not None else "",
            mode=r.request.mode.value if r is not None else "",
            waited_s=self.elapsed(),
            holders=r.holders if r is not None else (),
            error=error,
        )
