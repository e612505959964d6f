"""What only Python sees about locks, told to whoever listens (the Spark side's metrics).

Grants, refusals and releases of statements are counted by the JVM from the callback's answers
(no extra py4j round trip per statement). A few events happen where no answer goes to the JVM: a
release retried, locks lost (fencing), a backend's connection state. The modules where they
happen call :func:`emit` (counts) or :func:`backend_state` (a backend's state, called from the
backend's own folder: nothing here knows any backend); :mod:`sparklock.spark.telemetry_sink`
forwards them to the JVM's ``sparklock`` metric source in batches, off the thread that emitted.
No Spark import here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

log = logging.getLogger("sparklock")

#: A release was tried again (the manager's ``unlock.numRetries`` rounds, the background retrier).
RELEASE_RETRIED = "RELEASE_RETRIED"
#: Locks were lost while held (``count``: how many locks).
LOCKS_LOST = "LOCKS_LOST"
#: A backend's connection state event is ``<BACKEND>_STATE`` (``detail``: the state, e.g.
#: ``CONNECTED``): ``ZOOKEEPER_STATE`` for the ``zookeeper`` backend.
STATE_SUFFIX = "_STATE"
CONNECTED = "CONNECTED"
#: What crosses to the JVM for a backend's state: a gauge of its metric source (``detail``: the
#: gauge's name ``<backend>Connected``, ``count``: 1 while connected); the JVM knows no backend.
BACKEND_STATE = "BACKEND_STATE"


@dataclass(frozen=True)
class Report:
    """What only this side sees, for the JVM's metrics (``SparkLockBridge.reportTelemetry`` takes
    a JSON array of :func:`for_jvm` of these): ``RELEASE_RETRIED`` / ``LOCKS_LOST`` add ``count``;
    ``<BACKEND>_STATE`` becomes the gauge ``<backend>Connected``."""

    event: str
    count: int = 1
    detail: str | None = None


Sink = Callable[[Report], None]

_guard = threading.Lock()
_sinks: list[Sink] = []
#: Each backend's last state, replayed to a new sink (a gauge that must not start wrong).
_states: dict[str, Report] = {}


def add_sink(sink: Sink) -> None:
    """``sink(report)`` gets every later report, and now each backend's last state
    (idempotent)."""
    with _guard:
        if sink not in _sinks:
            _sinks.append(sink)
        states = list(_states.values())
    for state in states:
        _call(sink, state)


def remove_sink(sink: Sink) -> None:
    with _guard:
        if sink in _sinks:
            _sinks.remove(sink)


def state_event(backend: str) -> str:
    """The event a backend's state is reported as (``zookeeper`` → ``ZOOKEEPER_STATE``)."""
    return backend.upper() + STATE_SUFFIX


def last_backend_state(backend: str) -> Report | None:
    """What ``backend`` last reported of its connection (None: nothing yet in this process)."""
    with _guard:
        return _states.get(backend)


def backend_state(backend: str, state: str) -> None:
    """A backend's connection changed state (``CONNECTED`` when it can take locks): kept for
    later sinks and told to every sink now. Never blocks (a client library's thread calls it)."""
    report = Report(state_event(backend), 1, state)
    with _guard:
        _states[backend] = report
    _tell(report)


def gauge_name(backend: str) -> str:
    """The JVM gauge of a backend's connection: ``zookeeper`` -> ``zookeeperConnected``."""
    return backend.lower() + "Connected"


def for_jvm(report: Report) -> Report:
    """``report`` as the JVM's generic metric source reads it: a backend's state becomes its
    gauge (1 while connected)."""
    if report.event != BACKEND_STATE and report.event.endswith(STATE_SUFFIX):
        backend = report.event[: -len(STATE_SUFFIX)]
        return Report(BACKEND_STATE, int(report.detail == CONNECTED), gauge_name(backend))
    return report


def backend_state_defaults(backends: Iterable[str]) -> list[Report]:
    """The gauges of ``backends`` that no report has set yet, at 0: a new metric source shows
    them from the start, as a gauge that appeared only with its first change would not."""
    with _guard:
        missing = [b for b in backends if b not in _states]
    return [Report(BACKEND_STATE, 0, gauge_name(b)) for b in missing]


def emit(event: str, count: int = 1, detail: str | None = None) -> None:
    """Tell every sink. Sinks must not block (the emitter may hold a lock manager's lock or run
    on a client library's connection thread)."""
    _tell(Report(event, count, detail))


def _tell(report: Report) -> None:
    with _guard:
        sinks = list(_sinks)
    for sink in sinks:
        _call(sink, report)


def _call(sink: Sink, report: Report) -> None:
    try:
        sink(report)
    except Exception:  # metrics must never break locking
        log.debug("sparklock: a telemetry sink failed", exc_info=True)
