"""Failed releases, retried in the background until their locks are gone.

A release that still fails after ``spark.sparklock.unlock.numRetries`` is handed here: a daemon
thread retries it every :data:`UNRELEASED_RETRY_INTERVAL` until the locks are released, or until
retrying is pointless (:func:`pointless`: the locks are lost, or the manager is closed) -- then
the handle is given up with one WARNING. The thread ends with the last handle.
"""

from __future__ import annotations

import logging
import threading
import time

from .. import telemetry
from ..errors import SparkLockError
from ..managers import HeldLocks

log = logging.getLogger("sparklock")

#: How often handles whose release failed are retried in the background (seconds).
UNRELEASED_RETRY_INTERVAL = 1.0


def pointless(held: HeldLocks) -> str | None:
    """Why retrying the release of ``held`` is pointless, or None while it is not.

    Lost locks are gone (their release is a no-op); a closed manager is not to be used any
    more (its connection goes with its last user)."""
    if held.lost:
        return f"its locks are lost: {held.lost_reason}"
    if held.manager is not None and held.manager.closed:
        return f"its {held.manager.kind} lock manager is closed"
    return None


class ReleaseRetrier:
    """Handles whose release failed, and the thread that retries them."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._unreleased: dict[str, HeldLocks] = {}
        self._thread: threading.Thread | None = None

    def add(self, handle: str, held: HeldLocks) -> None:
        """Keep retrying the release of ``held`` in the background."""
        with self._guard:
            self._unreleased[handle] = held
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(
                target=self._loop, name="sparklock-unlock-retry", daemon=True
            )
            self._thread.start()

    def handles(self) -> list[str]:
        with self._guard:
            return sorted(self._unreleased)

    def retry(self) -> int:
        """One retry of every failed release; returns how many are still unreleased.

        Handles for which retrying is pointless (:func:`pointless`) are dropped, with one
        WARNING naming them and why.
        """
        with self._guard:
            pending = list(self._unreleased.items())
        given_up: list[str] = []
        for handle, held in pending:
            why = pointless(held)
            if why is None:
                telemetry.emit(telemetry.RELEASE_RETRIED)
                try:
                    held.release()
                except SparkLockError as e:
                    log.debug("sparklock: releasing %s again failed: %s", handle, e)
                    continue
                except Exception:
                    log.exception("sparklock: releasing %s again failed", handle)
                    continue
                why = pointless(held)  # lost while we tried: the release was a no-op
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

    def _loop(self) -> None:
        while True:
            time.sleep(UNRELEASED_RETRY_INTERVAL)
            if self.retry() == 0:
                with self._guard:
                    if not self._unreleased:
                        self._thread = None
                        return
