"""The driver JVM dying under a living Python: its statements' locks released.

A statement's implicit locks are released when the JVM reports that the statement ended. A JVM
that dies (the OOM killer, a crash, ``kill -9``) never reports it, while Python, which holds the
ZooKeeper session and sends the metastore's heartbeats, lives on and keeps those locks alive for
as long as it runs: every other driver would wait on statements that no longer exist.

So Python watches the JVM: the ``java`` process pyspark launched (waited for on a thread), or,
under ``spark-submit`` where the JVM is Python's parent and started it, the parent (polled: a
dead parent leaves Python to another one). When it is gone, every statement lock of this process
is released (their statements died with the JVM: nothing of theirs can commit any more). Locks
of ``LOCK TABLE`` stay (Hive's rule: explicit locks outlive their session); ``python -m
sparklock stale`` finds them once the process has exited.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from ..errors import SparkLockError

log = logging.getLogger("sparklock")

#: How often a ``spark-submit`` Python checks that its parent (the driver JVM) still lives, s.
PARENT_POLL = 1.0

_watched: set[int] = set()
_guard = threading.Lock()


def watch(gateway: Any) -> None:
    """Watch the JVM behind ``gateway`` (once per gateway)."""
    with _guard:
        if id(gateway) in _watched:
            return
        _watched.add(id(gateway))
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        target, args = _wait_for_child, (proc,)
    elif os.environ.get("PYSPARK_GATEWAY_PORT"):
        target, args = _poll_parent, (os.getppid(),)
    else:
        return  # a JVM this process neither started nor runs under: nothing to watch
    threading.Thread(target=target, args=args, name="sparklock-jvm-watch", daemon=True).start()


def _wait_for_child(proc: Any) -> None:
    code = proc.wait()
    jvm_gone(f"the driver JVM (pid {proc.pid}) exited with code {code}")


def _poll_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    jvm_gone(f"the driver JVM (pid {parent}, this process's parent) is gone")


def jvm_gone(reason: str) -> None:
    """Release every statement lock this process holds (see the module's docstring)."""
    from ..service import get_service

    service = get_service()
    handles = service.statement_handles()
    for handle in handles:
        try:
            service.release(handle)
        except SparkLockError as e:  # lost, or unreleasable: then retried in the background
            log.warning("sparklock: %s: releasing %s: %s", reason, handle, e)
    if handles:
        log.warning("sparklock: %s: released the locks of %d statement(s)", reason, len(handles))
