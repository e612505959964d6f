"""The Python end of the bridge: ``io.sparklock.shim.LockCallback`` implemented for py4j.

Every method takes and returns JSON text (jvm-shim/BRIDGE.md) and never raises into the JVM: a
:class:`~sparklock.errors.SparkLockError` becomes ``{"ok": false, "error": str(e)}`` (the JVM
throws it verbatim, so the text starts with its code), anything else becomes ``ok: false`` with
a ``LOCK_SERVICE_ERROR`` text and is logged with its traceback.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

from ..errors import SparkLockError

log = logging.getLogger("sparklock")


def _service():
    from ..service import get_service

    return get_service()


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=str, separators=(",", ":"))


class PyLockCallback:
    """One per Python process (per py4j gateway), shared by every session and thread."""

    class Java:
        implements = ["io.sparklock.shim.LockCallback"]

    def __init__(self) -> None:
        self._record_lock = threading.Lock()
        self._recorders: list[collections.deque] = []

    # -- LockCallback ---------------------------------------------------------------------------
    def acquire(self, facts_json: str) -> str:
        def run() -> dict:
            facts = json.loads(facts_json)
            self._record(facts)
            handle = _service().acquire(facts)
            return {"ok": True, "handle": handle or ""}

        return self._answer("acquire", run)

    def release(self, handle: str) -> str:
        def run() -> dict:
            _service().release(handle)
            return {"ok": True}

        return self._answer("release", run)

    def explain(self, facts_json: str) -> str:
        def run() -> dict:
            rows = _service().explain(json.loads(facts_json))
            return {"ok": True, "rows": [list(r) for r in rows]}

        return self._answer("explain", run)

    def command(self, request_json: str) -> str:
        def run() -> dict:
            columns, rows = _service().command(json.loads(request_json))
            return {"ok": True, "columns": list(columns), "rows": [list(r) for r in rows]}

        return self._answer("command", run)

    # -- plumbing -------------------------------------------------------------------------------
    def _answer(self, method: str, run) -> str:
        try:
            return _dumps(run())
        except SparkLockError as e:
            log.debug("sparklock: %s refused: %s", method, e)
            return _dumps({"ok": False, "error": str(e)})
        except BaseException as e:  # noqa: BLE001 - never let an exception cross into the JVM
            if isinstance(e, (SystemExit, GeneratorExit)):
                raise
            log.exception("sparklock: the lock service failed in %s", method)
            kind = (
                "LOCK_WAIT_CANCELLED" if isinstance(e, KeyboardInterrupt) else "LOCK_SERVICE_ERROR"
            )
            return _dumps(
                {
                    "ok": False,
                    "error": f"{kind}: the Python lock service failed in {method}: "
                    f"{type(e).__name__}: {e}",
                }
            )

    def _record(self, facts: dict) -> None:
        if self._recorders:
            with self._record_lock:
                for r in self._recorders:
                    r.append(facts)

    @contextlib.contextmanager
    def recording(self, maxlen: int = 1000) -> Iterator[collections.deque]:
        """Collect the facts of every ``acquire`` while the block runs (tests, debugging)."""
        buf: collections.deque = collections.deque(maxlen=maxlen)
        with self._record_lock:
            self._recorders.append(buf)
        try:
            yield buf
        finally:
            with self._record_lock:
                self._recorders.remove(buf)
