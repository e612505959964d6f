"""Fencing: stop a statement's Spark jobs the moment its locks are lost.

When a handle's locks are lost (ZooKeeper session expired) the registered fencers run at once;
the Spark callback's fencer asks the JVM to cancel the handle's jobs
(``SparkLockBridge.cancelFencedJobs``; the JVM owns the fence tag).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("sparklock")

Fencer = Callable[[str, str], None]  # (handle, reason)


class Fencing:
    """The registered fencers, run for a handle whose statement is still running.

    ``is_running(handle)`` tells whether the handle's statement still runs: once it has ended
    (released, or kept only for the release retry) its fence tag may sit on a thread that now
    runs other work, so it is not fenced."""

    def __init__(self, is_running: Callable[[str], bool]) -> None:
        self._is_running = is_running
        self._guard = threading.Lock()
        self._fencers: list[Fencer] = []

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
