"""A running statement's lock removed by someone else: an UNLOCK of another driver or session,
``python -m sparklock release``, Hive's ``UNLOCK TABLE``.

Hive's rule frees the object at once, so another writer may be granted it while the statement
still writes. An UNLOCK of this process fences the statement directly (``service.fencing``); one
of another process reaches it only through ZooKeeper: every node that protects a write of a
granted statement (its EXCLUSIVE nodes, and SHARED nodes on what it writes or an ancestor of it)
carries a one-shot ``exists`` watch, set without waiting when the set is granted. A deletion the
manager did not make itself (the set is still live: a release stops tracking it first) is
reported to the listeners, which fence the statement unless its commit is already out.

Reading sets are not watched: an UNLOCK of what a statement only reads leaves it running, as
under Hive. The watches cost one request per watched node, sent with the grant's answer already
on its way; a node already gone when the watch is set counts as removed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial

from kazoo.protocol.states import EventType, WatchedEvent

from ...locks.model import LockMode
from ...locks.objects import LockObject
from ..base import HeldLocks
from .live_sets import LiveSets
from .wire.transport import Transport

log = logging.getLogger("sparklock")

#: How long a removal this process announced (:meth:`RemovalWatch.expect`) stays its own, s.
OWN_REMOVAL_MEMORY = 60.0

#: ``listener(held, removed_lock_ids)``, on a thread of its own.
RemovalListener = Callable[[HeldLocks, set[str]], None]


def write_guards(held: HeldLocks) -> list[str]:
    """The lock ids of ``held`` whose removal opens one of its writes to another writer."""
    writes = held.exclusive_objects()
    if not writes:
        return []
    return [i.lock_id for i in held.locks if i.mode is LockMode.EXCLUSIVE or _covers(i.obj, writes)]


def _covers(obj: LockObject, writes: Sequence[LockObject]) -> bool:
    return any(obj == w or obj.is_ancestor_of(w) for w in writes)


class RemovalWatch:
    """Watches the write-protecting nodes of the live implicit sets of one manager."""

    def __init__(self, transport: Transport, live: LiveSets) -> None:
        self._transport = transport
        self._live = live
        self._guard = threading.Lock()
        self._listeners: list[RemovalListener] = []
        self._own: dict[str, float] = {}  # path -> when this process's UNLOCK removed it

    def add_listener(self, listener: RemovalListener) -> None:
        with self._guard:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def expect(self, paths: Sequence[str]) -> None:
        """This process is about to remove ``paths`` (its own UNLOCK, which fences the holders
        itself, naming who unlocked): their watches report nothing. Forgotten after a minute."""
        now = time.monotonic()
        with self._guard:
            for path in [p for p, t in self._own.items() if now - t > OWN_REMOVAL_MEMORY]:
                del self._own[path]
            self._own.update(dict.fromkeys(paths, now))

    def watch(self, held: HeldLocks) -> None:
        """Watch ``held``'s write guards (no-op without listeners: nobody would be told)."""
        if not self._listeners:
            return
        paths = write_guards(held)
        if not paths:
            return
        try:
            client = self._transport.client()
            for path in paths:
                answer = client.exists_async(path, watch=partial(self._fired, held, path))
                answer.rawlink(partial(self._answered, held, path))
        except Exception as e:  # noqa: BLE001 - the session's own loss handling covers it
            log.debug("sparklock: not watching the locks of %s: %s", held.query_id, e)

    def _answered(self, held: HeldLocks, path: str, answer) -> None:
        if answer.successful() and answer.get() is None:
            self._removed(held, path)  # gone before the watch was set

    def _fired(self, held: HeldLocks, path: str, event: WatchedEvent) -> None:
        if event.type == EventType.DELETED:
            self._removed(held, path)
        elif event.type == EventType.CHANGED and self._live.contains(held):
            self.watch_one(held, path)  # a one-shot watch: set it again

    def watch_one(self, held: HeldLocks, path: str) -> None:
        try:
            self._transport.client().exists_async(path, watch=partial(self._fired, held, path))
        except Exception as e:  # noqa: BLE001 - as in watch
            log.debug("sparklock: not watching %s: %s", path, e)

    def _removed(self, held: HeldLocks, path: str) -> None:
        if held.released or held.lost or not self._live.contains(held):
            return  # released by this manager, or gone with its session (handled there)
        with self._guard:
            if self._own.pop(path, None) is not None:
                return
            listeners = list(self._listeners)
        # off kazoo's event thread: a listener calls into the JVM
        for listener in listeners:
            threading.Thread(
                target=listener, args=(held, {path}), name="sparklock-lock-removed", daemon=True
            ).start()
