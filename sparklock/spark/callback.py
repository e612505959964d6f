"""The Python end of the bridge: ``io.sparklock.shim.wire.LockCallback`` implemented for py4j.

Every method takes and returns JSON text (jvm-shim/BRIDGE.md), its answer one of the typed
:mod:`sparklock.protocol.messages`, and never raises into the JVM: a
:class:`~sparklock.errors.SparkLockError` becomes ``{"ok": false, "error": str(e), "failure":
{"condition": ..., "parameters": {...}}}`` (the JVM throws it as a ``SparkThrowable`` of that
condition), anything else becomes ``ok: false`` with ``LOCK_SERVICE_ERROR`` and is logged with its
traceback.

It also connects Spark's cancellation to the lock service (see :func:`install_cancel_hooks` and
:func:`fence_jobs`): a statement still *waiting* for its locks has no Spark job yet, so Spark's own
cancel cannot reach it; and a statement whose locks are *lost* must have its jobs cancelled.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import threading
from collections.abc import Iterator

from ..errors import LockWaitCancelledError, SparkLockError
from ..protocol.messages import (
    Acquired,
    CancelWaitsRequest,
    Done,
    Explained,
    ExplicitLockRequest,
    Failure,
    Locks,
    PlannedLock,
    SessionClosedRequest,
    ShowLocksRequest,
    UnlockRequest,
    read_request,
    refused,
    to_json,
)
from ..rules.facts import Facts, parse_facts
from .lease_push import pusher

log = logging.getLogger("sparklock")


def _service():
    from ..service import get_service

    return get_service()


class PyLockCallback:
    """One per Python process (per py4j gateway), shared by every session and thread."""

    class Java:
        implements = ["io.sparklock.shim.wire.LockCallback"]

    def __init__(self) -> None:
        self._record_lock = threading.Lock()
        self._recorders: list[collections.deque] = []
        install_cancel_hooks()
        _service().add_fencer(fence_jobs)
        _service().add_revoker(revoke_locks)
        _service().add_lease_watcher(pusher())  # a grant's lease renewals, pushed to the JVM

    # -- LockCallback ---------------------------------------------------------------------------
    def acquire(self, facts_json: str) -> str:
        def run() -> Acquired:
            facts = parse_facts(facts_json)
            self._record(facts)
            return _service().grant(facts)

        return self._answer("acquire", run)

    def release(self, handle: str) -> str:
        def run() -> Done:
            _service().release(handle)
            return Done()

        return self._answer("release", run)

    def explain(self, facts_json: str) -> str:
        def run() -> Explained:
            planned = _service().explain(parse_facts(facts_json))
            return Explained(locks=[PlannedLock(name, mode) for name, mode in planned])

        return self._answer("explain", run)

    def showLocks(self, request_json: str) -> str:  # noqa: N802 - the Java interface's name
        def run() -> Locks:
            return Locks(locks=_service().show_locks(read_request(ShowLocksRequest, request_json)))

        return self._answer("showLocks", run)

    def lock(self, request_json: str) -> str:
        def run() -> Done:
            _service().lock(read_request(ExplicitLockRequest, request_json))
            return Done()

        return self._answer("lock", run)

    def unlock(self, request_json: str) -> str:
        def run() -> Done:
            _service().unlock(read_request(UnlockRequest, request_json))
            return Done()

        return self._answer("unlock", run)

    # -- a server's JVM (Thrift / Connect, see sparklock.servers) about its sessions -----------
    def cancelWaits(self, request_json: str) -> str:  # noqa: N802 - the Java interface's name
        def run() -> Done:
            from ..service.sessions import cancel_waits

            cancel_waits(read_request(CancelWaitsRequest, request_json))
            return Done()

        return self._answer("cancelWaits", run)

    def sessionClosed(self, request_json: str) -> str:  # noqa: N802 - the Java interface's name
        def run() -> Done:
            from ..service.sessions import session_closed

            session_closed(read_request(SessionClosedRequest, request_json))
            return Done()

        return self._answer("sessionClosed", run)

    def locksSnapshot(self, request_json: str) -> str:  # noqa: N802 - the Java interface's name
        """The Spark UI's Locks tab (``io.sparklock.shim.ui``): this application's locks."""
        from ..service.snapshot import snapshot_json

        return snapshot_json(request_json)

    # -- plumbing -------------------------------------------------------------------------------
    def _answer(self, method: str, run) -> str:
        try:
            return to_json(run())
        except SparkLockError as e:
            log.debug("sparklock: %s refused: %s", method, e)
            return to_json(refused(str(e), e.failure()))
        except BaseException as e:  # noqa: BLE001 - never let an exception cross into the JVM
            if isinstance(e, (SystemExit, GeneratorExit)):
                raise
            if isinstance(e, KeyboardInterrupt):
                # Ctrl-C while a statement waits for its locks. With PySpark's pinned threads the
                # JVM runs this callback on the Python thread that called the action, so the
                # SIGINT handler (cancelAllJobs, then KeyboardInterrupt) fires in here: the
                # manager has dropped the place in line; the statement fails with this text.
                log.warning("sparklock: %s interrupted (KeyboardInterrupt)", method)
                cancelled = LockWaitCancelledError(
                    f"interrupted (KeyboardInterrupt) in {method}; the statement holds no locks"
                )
                return to_json(refused(str(cancelled), cancelled.failure()))
            log.exception("sparklock: the lock service failed in %s", method)
            text = f"the Python lock service failed in {method}: {type(e).__name__}: {e}"
            return to_json(refused(f"LOCK_SERVICE_ERROR: {text}", Failure("LOCK_SERVICE_ERROR")))

    def _record(self, facts: Facts) -> None:
        if self._recorders:
            with self._record_lock:
                for r in self._recorders:
                    r.append(facts)

    @contextlib.contextmanager
    def recording(self, maxlen: int = 1000) -> Iterator[collections.deque]:
        """Collect the facts of every ``acquire`` (parsed ``Facts``) while the block runs (tests,
        debugging; ``sparklock.rules.facts.to_wire`` shows one as the JVM sent it)."""
        buf: collections.deque = collections.deque(maxlen=maxlen)
        with self._record_lock:
            self._recorders.append(buf)
        try:
            yield buf
        finally:
            with self._record_lock:
                self._recorders.remove(buf)


# -- cancellation and fencing ---------------------------------------------------------------------
_hooks_lock = threading.Lock()
_hooks_installed = False


def fence_jobs(handle: str, reason: str) -> None:
    """A handle's locks are lost: the JVM fences its statement at once (commits refused from now
    on, whatever lease deadline was pushed last) and cancels the Spark jobs it runs (tagged with
    the handle's fence tag, whose form the JVM alone knows). Its release reports ``LOCKS_LOST``."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        return
    bridge = sc._jvm.io.sparklock.shim.SparkLockBridge
    bridge.cancelFencedJobs(sc._jsc.sc(), handle, reason)


def revoke_locks(handle: str, reason: str) -> str:
    """An UNLOCK removed a running statement's locks: the JVM fences it unless a commit of it
    already passed its check ("fenced", "committed" or "unknown")."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        return "unknown"
    bridge = sc._jvm.io.sparklock.shim.SparkLockBridge
    return str(bridge.revokeLocks(handle, reason))


def _off_main_thread(fn, *args, **kwargs):
    """Run ``fn`` on a helper thread and wait for it.

    PySpark's SIGINT handler calls ``cancelAllJobs()`` on the main thread *while* that thread is
    inside a py4j call (``collect()``). With pinned threads (the default) the cancel would go out
    on the same py4j connection, which is mid-read: py4j fails it ("reentrant call inside
    BufferedReader"), so Ctrl-C cancels nothing and the query runs on, holding its locks. A helper
    thread has a connection of its own.
    """
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller
            box["error"] = e

    helper = threading.Thread(target=run, name="sparklock-cancel", daemon=True)
    helper.start()
    helper.join()
    if "error" in box:
        raise box["error"]
    return box.get("result")


def _wrap(cls: type, name: str, cancel) -> None:
    original = getattr(cls, name, None)
    if original is None or getattr(original, "_sparklock_wrapped", False):
        return

    @functools.wraps(original)
    def wrapper(self, *args, **kwargs):
        try:
            cancel(self, *args, **kwargs)
        except Exception:  # never let the lock service stop a cancellation
            log.exception("sparklock: ending lock waits in %s.%s failed", cls.__name__, name)
        if threading.current_thread() is threading.main_thread():
            return _off_main_thread(original, self, *args, **kwargs)
        return original(self, *args, **kwargs)

    wrapper._sparklock_wrapped = True  # type: ignore[attr-defined]
    wrapper._sparklock_original = original  # type: ignore[attr-defined]
    setattr(cls, name, wrapper)


def install_cancel_hooks() -> None:
    """Make PySpark's cancellations also end the matching lock *waits* (idempotent).

    A statement blocked in ``acquire`` runs no job yet: Spark's ``cancelJobGroup`` etc. find
    nothing to cancel, and the JVM action thread sits inside this Python callback. So the Python
    entry points are wrapped to call ``LockService.cancel_waits`` first, matched by the facts'
    ``jobGroup``/``jobTags``/``session``:

    ========================================  ======================================
    ``SparkContext.cancelAllJobs()``          every wait (also Ctrl-C: PySpark's SIGINT handler
                                              calls it)
    ``SparkContext.cancelJobGroup(g)``        waits whose thread's job group is ``g``
    ``SparkContext.cancelJobsWithTag(t)``     waits whose thread has job tag ``t``
    ``SparkSession.interruptAll()``           waits of that session
    ========================================  ======================================

    Cancellations issued from JVM code (Scala, the Spark UI's kill link) do not pass here: in a
    server (``sparklock.servers``) the JVM interrupts the statement's thread and sends
    ``cancelWaits`` itself (JDBC cancel, Connect interrupts, session end), and a group cancelled
    with its future jobs (``cancelJobGroupAndFutureJobs``, Spark 4.0+) is seen by the JVM's
    ``CancelledJobGroups``; elsewhere such a wait ends at its budget (``LOCK_CONFLICT``), holding
    nothing.

    Called on the main thread, the original runs on a helper thread (see
    :func:`_off_main_thread`): that is what makes Ctrl-C during ``collect()`` cancel the jobs at all
    with PySpark's pinned threads.
    """
    global _hooks_installed
    with _hooks_lock:
        if _hooks_installed:
            return
        from pyspark import SparkContext

        svc = _service

        _wrap(
            SparkContext,
            "cancelAllJobs",
            lambda self: svc().cancel_waits(reason="SparkContext.cancelAllJobs()"),
        )
        _wrap(
            SparkContext,
            "cancelJobGroup",
            lambda self, group, *a, **k: svc().cancel_waits(
                group=group, reason=f"SparkContext.cancelJobGroup({group!r})"
            ),
        )
        _wrap(
            SparkContext,
            "cancelJobsWithTag",
            lambda self, tag, *a, **k: svc().cancel_waits(
                tag=tag, reason=f"SparkContext.cancelJobsWithTag({tag!r})"
            ),
        )
        try:
            from pyspark.sql.session import SparkSession
        except ImportError:  # pragma: no cover
            SparkSession = None  # noqa: N806
        if SparkSession is not None:
            _wrap(
                SparkSession,
                "interruptAll",
                lambda self: svc().cancel_waits(
                    session=str(self._jsparkSession.sessionUUID()),
                    reason="SparkSession.interruptAll()",
                ),
            )
        _hooks_installed = True
