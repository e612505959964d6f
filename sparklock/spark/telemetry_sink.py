"""Forwards :mod:`sparklock.telemetry` reports to the JVM's ``sparklock`` metric source.

Reports are queued and sent by one daemon thread, a batch per py4j call
(``io.sparklock.shim.SparkLockBridge.reportTelemetry``): whoever emits (a release, kazoo's
connection thread) never waits for the JVM. :func:`install` also registers the metric source
with the session's SparkContext in case ``spark.plugins`` did not (pyspark's
``remote("local[...]")`` sets that key itself).
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

from .. import telemetry
from ..managers.registry import BACKENDS
from ..protocol.messages import to_json
from ..telemetry import Report

log = logging.getLogger("sparklock")

#: Most reports sent in one call (a burst of lost locks is still a few calls).
BATCH = 500


class JvmTelemetrySink:
    """One per process: queues reports and sends them to the active SparkContext's JVM."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Report] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._idle = threading.Condition(self._guard)
        self._pending = 0

    def __call__(self, report: Report) -> None:
        with self._guard:
            self._pending += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="sparklock-telemetry", daemon=True
                )
                self._thread.start()
        self._queue.put(report)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued report was sent (tests); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                _send(batch)
            except Exception:  # the JVM may be gone (context stopped): figures are best effort
                log.debug("sparklock: sending %d metric reports failed", len(batch), exc_info=True)
            with self._idle:
                self._pending -= len(batch)
                self._idle.notify_all()


def _send(batch: list[Report]) -> None:
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        return
    payload = "[" + ",".join(to_json(telemetry.for_jvm(r)) for r in batch) + "]"
    sc._jvm.io.sparklock.shim.SparkLockBridge.reportTelemetry(payload)


_sink = JvmTelemetrySink()


def sink() -> JvmTelemetrySink:
    """The process's sink (tests flush it)."""
    return _sink


def install(spark: Any) -> None:
    """Register the metric source of ``spark``'s context (idempotent) and forward reports to it;
    a new context's source gets the current ZooKeeper state again."""
    jvm = spark.sparkContext._jvm
    jvm.io.sparklock.shim.SparkLockBridge.registerMetrics(spark.sparkContext._jsc.sc())
    telemetry.remove_sink(_sink)
    gauged = [b.name for b in BACKENDS.values() if b.reports_connection]
    for report in telemetry.backend_state_defaults(gauged):
        _sink(report)
    telemetry.add_sink(_sink)  # replays the last ZooKeeper state to the (maybe new) source
