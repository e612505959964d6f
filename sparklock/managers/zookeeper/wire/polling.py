"""kazoo's threading handler with a ``select`` that is one ``poll(2)`` call.

Why: kazoo's connection thread, which carries every request of the process (one connection,
shared by all threads), waits in ``handler.select`` four or five times per request and answer
(the loop, the write, the answer's header and body). kazoo's own ``select`` builds an epoll
selector for each call — create, register, wait, close: four system calls and a few objects
each time — which was most of that thread's ~0.1 ms per request. ``poll`` has no file-number
limit either (why kazoo left ``select.select``) and costs one system call.
"""

from __future__ import annotations

import errno
import os
import select
from collections.abc import Sequence

from kazoo.handlers.threading import SequentialThreadingHandler

_READABLE = getattr(select, "POLLIN", 0) | getattr(select, "POLLPRI", 0)
_WRITABLE = getattr(select, "POLLOUT", 0)
# select() reports a socket in error or hung up as ready (the next recv/send says what happened)
_FAILED = getattr(select, "POLLERR", 0) | getattr(select, "POLLHUP", 0)
_INVALID = getattr(select, "POLLNVAL", 0)


def _fileno(obj: object) -> int:
    return obj if isinstance(obj, int) else obj.fileno()  # type: ignore[attr-defined]


class PollingHandler(SequentialThreadingHandler):
    """``SequentialThreadingHandler`` whose ``select`` is a single ``poll``; same answers."""

    name = "sparklock_polling_threading"

    def select(
        self, rlist: Sequence, wlist: Sequence, xlist: Sequence, timeout: float | None = None
    ) -> tuple[list, list, list]:
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be non-negative")
        poller = select.poll()
        wanted: dict[int, int] = {}
        for obj in rlist:
            fd = _fileno(obj)
            wanted[fd] = wanted.get(fd, 0) | _READABLE
        for obj in wlist:
            fd = _fileno(obj)
            wanted[fd] = wanted.get(fd, 0) | _WRITABLE
        for fd, events in wanted.items():
            if fd < 0:
                raise ValueError("Invalid event mask or fd")
            poller.register(fd, events)
        ready = dict(poller.poll(None if timeout is None else timeout * 1000.0))
        if any(events & _INVALID for events in ready.values()):
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        readable = [o for o in rlist if ready.get(_fileno(o), 0) & (_READABLE | _FAILED)]
        writable = [o for o in wlist if ready.get(_fileno(o), 0) & (_WRITABLE | _FAILED)]
        return readable, writable, []


def handler() -> SequentialThreadingHandler:
    """The handler for the process's kazoo client: polling where the platform has ``poll``."""
    return PollingHandler() if hasattr(select, "poll") else SequentialThreadingHandler()
