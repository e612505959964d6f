"""Server sessions as lock owners: what happens when one ends or a statement of it is cancelled.

The JVM (``io.sparklock.shim.server.ServerSessions``) sends two requests, each its own bridge call:
``cancelWaits`` when a statement's thread is interrupted while it waits for
locks (JDBC cancel, Connect interrupt, its session closing), and ``sessionClosed`` when a JDBC or
Connect session ends. Implicit locks need nothing here (a statement releases them when it ends);
explicit ``LOCK TABLE`` locks follow ``spark.sparklock.explicit.onSessionClose``.

When the application ends normally (the driver's or server's Python process exits), the LOCK
TABLE locks still held whose session said ``spark.sparklock.explicit.onApplicationEnd=release``
go too; by default they stay (Hive's rule).
"""

from __future__ import annotations

import atexit
import logging
import threading

from ..config import SparkLockConfig
from ..managers import HeldLocks
from ..protocol.messages import CancelWaitsRequest, SessionClosedRequest

log = logging.getLogger("sparklock")

#: The job tags Spark Connect puts on an operation's thread start with this.
CONNECT_OPERATION_TAG = "SparkConnect_OperationTag_"


def _service():
    from . import get_service

    return get_service()


class ExplicitLocksBySession:
    """The LOCK TABLE grants of each server session, with the session's config at LOCK time."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._by_session: dict[str, list[tuple[HeldLocks, SparkLockConfig]]] = {}

    def granted(self, session: str, held: HeldLocks, config: SparkLockConfig) -> None:
        with self._guard:
            grants = self._by_session.setdefault(session, [])
            grants[:] = [g for g in grants if not g[0].released]  # UNLOCKed since: forgotten
            grants.append((held, config))

    def application_ended(self) -> int:
        """Releases every session's explicit locks whose config says ``release`` at the end of
        the application; returns how many lock sets were released."""
        with self._guard:
            grants = [g for gs in self._by_session.values() for g in gs]
        released = 0
        for held, config in grants:
            if config.explicit_on_application_end != "release" or held.released:
                continue
            try:
                held.release()
                released += 1
            except Exception:
                log.exception(
                    "sparklock: releasing LOCK TABLE locks at the application's end failed"
                )
        return released

    def session_closed(self, session: str) -> int:
        """Releases the session's explicit locks whose config says ``release``; returns how many
        lock sets were released (UNLOCKed ones are gone already: their release is a no-op)."""
        with self._guard:
            grants = self._by_session.pop(session, [])
        released = 0
        for held, config in grants:
            if config.explicit_on_session_close != "release":
                continue
            try:
                held.release()
                released += 1
            except Exception:
                log.exception("sparklock: releasing a closed session's LOCK TABLE locks failed")
        return released

    def sessions(self) -> int:
        with self._guard:
            return len(self._by_session)


_explicit = ExplicitLocksBySession()
_installed = False
_install_lock = threading.Lock()


def install() -> ExplicitLocksBySession:
    """Track LOCK TABLE grants per session (idempotent; servers call it at start, drivers when
    a session attaches)."""
    global _installed
    with _install_lock:
        if not _installed:
            _service().observe_explicit(_explicit.granted)
            atexit.register(_explicit.application_ended)  # explicit.onApplicationEnd
            _installed = True
    return _explicit


def cancel_waits(request: CancelWaitsRequest) -> int:
    """Ends the waits of an interrupted server statement; returns how many ended."""
    reason = request.reason or "the server"
    if request.job_group:
        return _service().cancel_waits(group=request.job_group, reason=reason)
    cancelled = 0
    for tag in request.job_tags or ():
        if str(tag).startswith(CONNECT_OPERATION_TAG):
            cancelled += _service().cancel_waits(tag=str(tag), reason=reason)
    return cancelled


def session_closed(request: SessionClosedRequest) -> dict[str, int]:
    """Ends a closed server session's waits and releases its LOCK TABLE locks as configured
    (what it ended, for the logs)."""
    session = request.session
    if not session:
        return {"cancelled": 0, "released": 0}
    cancelled = _service().cancel_waits(
        session=session, reason=f"the end of session {request.server_session}"
    )
    released = _explicit.session_closed(session)
    log.info(
        "sparklock: session %s closed: %d wait(s) ended, %d LOCK TABLE lock set(s) released",
        request.server_session,
        cancelled,
        released,
    )
    return {"cancelled": cancelled, "released": released}
