"""Lease renewals pushed to the driver's JVM (jvm-shim ``SparkLockBridge.renewLease``).

A manager renews its lease on its connection thread (kazoo's, for ZooKeeper), which must never
wait for py4j. So a renewal only records the newest term and wakes one pusher thread, which makes
at most one py4j call per ``MIN_INTERVAL`` (a new session at once), and only once the JVM's copy
trails by ``1/LAG_FRACTION`` of the time the lease has left: a busy driver's answers renew it
every few milliseconds, and each grant hands the JVM a fresh deadline anyway, so pushing every
renewal would spend a py4j call (and CPU beside the running query) for nothing. The JVM's deadline
is thus a little older than Python's: the lease lapses a little early, never late. A stalled
Python process pushes nothing: the JVM's lease lapses and the JVM fences on its own.
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("sparklock")

#: Seconds between two pushes to the JVM (renewals in between are merged into the newest).
MIN_INTERVAL = 0.2
#: A renewal is pushed once the JVM's deadline trails it by 1/this of the time left (so
#: the JVM's lease always keeps most of what Python's has).
LAG_FRACTION = 8
#: Epochs whose deadline is this far behind are forgotten (the metastore manager makes one per
#: statement; the JVM forgets them after as long).
FORGET_NS = 600 * 10**9


class LeasePusher:
    """The newest deadline per epoch (a process may hold several ZooKeeper sessions: other
    quorums, timeouts or credentials; the metastore manager has one per granted statement) and
    the thread that hands them to the JVM."""

    def __init__(self) -> None:
        self._newest: dict[int, int] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self.pushes = 0
        #: (context, its ``SparkLockBridge`` class), on the pusher thread: looked up once
        self._bridge: tuple[object, object] | None = None

    def __call__(self, epoch: int, deadline_ns: int) -> None:
        """A renewal (on a connection thread: records and wakes, never blocks)."""
        self._newest[epoch] = deadline_ns
        self._wake.set()
        if self._thread is None:
            self._start()

    def _start(self) -> None:
        with self._guard:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="sparklock-lease-push", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        pushed: dict[int, int] = {}
        while True:
            self._wake.wait()
            self._wake.clear()
            now = time.monotonic_ns()
            for epoch, deadline in list(self._newest.items()):
                if deadline < now - FORGET_NS:  # long lapsed: no statement is bound to it
                    self._newest.pop(epoch, None)
                    pushed.pop(epoch, None)
                elif _due(pushed.get(epoch), deadline, now) and self._push(epoch, deadline):
                    pushed[epoch] = deadline
                    self.pushes += 1
            time.sleep(MIN_INTERVAL)  # renewals meanwhile: the newest go with the next push

    def _push(self, epoch: int, deadline_ns: int) -> bool:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is None:
            return False
        try:
            if self._bridge is None or self._bridge[0] is not sc:
                self._bridge = (sc, sc._jvm.io.sparklock.shim.SparkLockBridge)
            self._bridge[1].renewLease(epoch, deadline_ns)  # type: ignore[attr-defined]
            return True
        except Exception:  # noqa: BLE001 - a JVM going away: the next renewal tries again
            log.debug("sparklock: pushing the lease to the JVM failed", exc_info=True)
            return False


def _due(pushed: int | None, deadline: int, now: int) -> bool:
    """Whether the JVM should have ``deadline`` now: a new epoch, or one whose pushed deadline
    trails it by ``1/LAG_FRACTION`` of the time left (all of it once lapsed)."""
    if pushed is None:
        return True
    return deadline > pushed and deadline - pushed >= max(0, deadline - now) // LAG_FRACTION


_pusher: LeasePusher | None = None
_pusher_lock = threading.Lock()


def pusher() -> LeasePusher:
    """The process's pusher (one JVM per Python driver)."""
    global _pusher
    with _pusher_lock:
        if _pusher is None:
            _pusher = LeasePusher()
        return _pusher


__all__ = ["LAG_FRACTION", "MIN_INTERVAL", "LeasePusher", "pusher"]
