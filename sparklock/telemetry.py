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


@dataclass(frozen=True)
class Report:
    """What only this side sees, for the JVM's metrics (``SparkLockBridge.reportTelemetry`` takes
    a JSON array of these, this module): ``RELEASE_RETRIED`` / ``LOCKS_LOST`` add
    ``count``; ``ZOOKEEPER_STATE`` sets the connection gauge from ``detail`` (kazoo's state)."""

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
