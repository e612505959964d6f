"""What only Python sees about locks, told to whoever listens (the Spark side's metrics).

Grants, refusals and releases of statements are counted by the JVM from the callback's answers
(no extra py4j round trip per statement). A few events happen where no answer goes to the JVM: a
release retried, locks lost (fencing), the ZooKeeper connection's state. The modules where they
happen call :func:`emit`; :mod:`sparklock.spark.telemetry_sink` forwards them to the JVM's
``sparklock`` metric source in batches, off the thread that emitted. No Spark import here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("sparklock")

#: A release was tried again (the manager's ``unlock.numRetries`` rounds, the background retrier).
RELEASE_RETRIED = "RELEASE_RETRIED"
#: Locks were lost while held (``count``: how many locks).
LOCKS_LOST = "LOCKS_LOST"
#: The ZooKeeper connection changed state (``detail``: ``CONNECTED``, ``SUSPENDED``, ``LOST``).
ZOOKEEPER_STATE = "ZOOKEEPER_STATE"
#: What crosses to the JVM for a backend's state: a gauge of its metric source (``detail``: the
#: gauge's name, ``count``: its value); the JVM knows no backend.
BACKEND_STATE = "BACKEND_STATE"
_ZOOKEEPER_GAUGE = "zookeeperConnected"


@dataclass(frozen=True)
class Report:
    """What only this side sees, for the JVM's metrics (``SparkLockBridge.reportTelemetry`` takes
    a JSON array of :func:`for_jvm` of these): ``RELEASE_RETRIED`` / ``LOCKS_LOST`` add ``count``;
    ``BACKEND_STATE`` sets the gauge ``detail`` to ``count``."""

    event: str
    count: int = 1
    detail: str | None = None


Sink = Callable[[Report], None]

_guard = threading.Lock()
_sinks: list[Sink] = []
#: The last ZooKeeper state, replayed to a new sink (a gauge that must not start wrong).
_zookeeper_state: Report | None = None


def add_sink(sink: Sink) -> None:
    """``sink(report)`` gets every later report, and now the last ZooKeeper state (idempotent)."""
    with _guard:
        if sink not in _sinks:
            _sinks.append(sink)
        state = _zookeeper_state
    if state is not None:
        _call(sink, state)


def remove_sink(sink: Sink) -> None:
    with _guard:
        if sink in _sinks:
            _sinks.remove(sink)


def last_zookeeper_state() -> Report | None:
    return _zookeeper_state


def for_jvm(report: Report) -> Report:
    """``report`` as the JVM's generic metric source reads it: a ZooKeeper state becomes the
    backend gauge ``zookeeperConnected`` (1 while connected)."""
    if report.event == ZOOKEEPER_STATE:
        return Report(BACKEND_STATE, int(report.detail == "CONNECTED"), _ZOOKEEPER_GAUGE)
    return report


def backend_state_defaults() -> list[Report]:
    """The backend gauges no report has set yet, at 0: a new metric source shows them from the
    start, as a gauge that appeared only with its first change would not."""
    if _zookeeper_state is not None:
        return []
    return [Report(BACKEND_STATE, 0, _ZOOKEEPER_GAUGE)]


def emit(event: str, count: int = 1, detail: str | None = None) -> None:
    """Tell every sink. Sinks must not block (the emitter may hold a lock manager's lock or run
    on kazoo's connection thread)."""
    global _zookeeper_state
    report = Report(event, count, detail)
    with _guard:
        if event == ZOOKEEPER_STATE:
            _zookeeper_state = report
        sinks = list(_sinks)
    for sink in sinks:
        _call(sink, report)


def _call(sink: Sink, report: Report) -> None:
    try:
        sink(report)
    except Exception:  # metrics must never break locking
        log.debug("sparklock: a telemetry sink failed", exc_info=True)
