"""What a waiting statement tells the log: once when it starts waiting, then every few seconds,
and once granted after waiting. Both wait policies of every manager report through it."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..locks.model import LockSettings

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

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def waiting(self, refusal: Refusal, attempt: int | None = None) -> None:
        now = time.monotonic()
        if self.waited and now - self.last_log < WAIT_LOG_INTERVAL:
            return
        self.waited = True
        self.last_log = now
        holders = "; ".join(h.describe() for h in refusal.holders) or "unknown holder"
        where = f"attempt {attempt}/{self.settings.num_retries}" if attempt else "queued"
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
            log.info(
                "sparklock: query %s got its %d locks after %.3f s",
                self.query_id,
                len(held.locks),
                self.elapsed(),
            )
