"""The Python side of the bridge: what the JVM shim calls (typed facts and messages).

Modules: :mod:`.coordinator` (``LockService``: facts → lock set → manager, handles, lock
statements), :mod:`.cancellation` (the registry of lock waits a Spark cancellation can end),
:mod:`.fencing` (stop a statement's jobs when its locks are lost), :mod:`.release_retrier`
(failed releases retried in the background), :mod:`.journal` (grant/release records).
:func:`get_service` is the process-wide instance, shared by every session and thread.
"""

from __future__ import annotations

import threading

from .cancellation import WaitCancelledError
from .coordinator import LockService, config_of
from .fencing import Fencer
from .release_retrier import UNRELEASED_RETRY_INTERVAL

__all__ = [
    "UNRELEASED_RETRY_INTERVAL",
    "Fencer",
    "LockService",
    "WaitCancelledError",
    "config_of",
    "get_service",
]

_service: LockService | None = None
_service_lock = threading.Lock()


def get_service() -> LockService:
    """The process's lock service (created on first use)."""
    global _service
    with _service_lock:
        if _service is None:
            _service = LockService()
        return _service
