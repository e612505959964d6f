"""A running statement's lock removed by someone else: an UNLOCK of another driver or session,
``python -m sparklock release``, Hive's ``UNLOCK TABLE``.

Hive's rule frees the object at once, so another writer may be granted it while the statement
still writes. An UNLOCK of this process fences the statement directly (``service.fencing``); one
of another process reaches it only through ZooKeeper: every node that protects a write of a
granted statement (its EXCLUSIVE nodes, and SHARED nodes on what it writes or an ancestor of it)
carries a one-shot watch. A deletion the manager did not make itself (the set is still live: a
release stops tracking it first) is reported to the listeners, which fence the statement unless
its commit is already out. An UNLOCK of what a statement only reads leaves it running, as under
Hive.

The watches are set by one ``setWatches`` request (:mod:`.wire.set_watches`) from the zxid the
nodes were created at, which the create's answer gave: each node is watched unless it is gone
(an event says so at once) or changed since (an event too: it is then read, and counts as
removed unless it still carries the statement's data). A node whose creation zxid is not known
(its create's outcome was found by reading) is read with a watch instead. The same watches tell
the release which nodes are still the statement's own (an UNLOCK may have removed one, and a
re-created object node restarted the names): a node watched from its creation, whose watcher
kazoo has not taken out of its table since (it does on reading the node's event), is, up to the
events still on the wire, exactly what a read before the delete would find (it leaves the same
round trip open). So the release reads only the nodes no watch answers for. A writer's nodes
on what it only reads, made by the same create multi as a guard, ride on that guard's
``setWatches`` (no request of their own; their removal is not reported), so a writer reads
nothing back. A statement that writes nothing is not watched: it sends no ``setWatches`` to
ride on, and each watch costs an event at the release, more than the one read at the release
(which coalesces) saves.

A watch that fires for anything but a deletion (data written into the node, or a dropped
connection, after which kazoo forgets every watch) is set again, once reconnected, with a fresh
read. The watches are set by a worker thread, so that the grant's answer reaches the JVM first.
That thread takes the answers itself, and a released set's watchers leave kazoo's table before
its nodes are deleted: neither the answers, nor the events of its own deletes, nor the release's
question to its watches is handed over to kazoo's callback threads (a thread hand-off each, on
a 2-core machine a cost the statement shares).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial

from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import EventType, WatchedEvent

from ...locks.model import LockData, LockInfo, LockMode
from ...locks.objects import LockObject
from ..base import HeldLocks
from .live_sets import LiveSets
from .wire.set_watches import set_watches
from .wire.transport import Transport

log = logging.getLogger("sparklock")

#: How long a removal this process announced (:meth:`RemovalWatch.expect`) stays its own, s.
OWN_REMOVAL_MEMORY = 60.0

#: How long the thread that sets watches waits for work before it ends, s.
WORKER_IDLE = 10.0

#: How long that thread waits for the answers to the watches it asked for, s (later answers
#: are handled on kazoo's completion thread).
ANSWER_WAIT = 1.0

#: Where a watched node stands: watch asked for (no answer yet, or it failed), looked at again
#: (an event other than its deletion: read again), set on the node carrying our data, removed
#: (or carrying someone else's data).
ASKED, CHECKING, WATCHED, REMOVED = "asked", "checking", "watched", "removed"

#: ``listener(held, removed_lock_ids)``, on a thread of its own.
RemovalListener = Callable[[HeldLocks, set[str]], None]

#: A set's paths to watch, and the zxid each was created at (where known).
Batch = tuple[HeldLocks, list[str], Mapping[str, int]]


def write_guards(held: HeldLocks) -> list[str]:
    """The lock ids of ``held`` whose removal opens one of its writes to another writer."""
    writes = held.exclusive_objects()
    if not writes:
        return []
    return [i.lock_id for i in held.locks if i.mode is LockMode.EXCLUSIVE or _covers(i.obj, writes)]


def _covers(obj: LockObject, writes: Sequence[LockObject]) -> bool:
    return any(obj == w or obj.is_ancestor_of(w) for w in writes)


class RemovalWatch:
    """Watches the write-protecting nodes of the live implicit sets of one manager: reports a
    removal by someone else, and tells the release which watched nodes are still its own."""

    def __init__(self, transport: Transport, live: LiveSets) -> None:
        self._transport = transport
        self._live = live
        self._guard = threading.Lock()
        self._listeners: list[RemovalListener] = []
        self._own: dict[str, float] = {}  # path -> when this process's UNLOCK removed it
        self._nodes: dict[str, tuple[HeldLocks, str]] = {}  # path -> (its set, ASKED/...)
        self._watchers: dict[str, Callable[[WatchedEvent], None]] = {}  # path -> its watcher
        self._queue: queue.SimpleQueue[Batch] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None

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

    def watch(self, held: HeldLocks, created_at: Mapping[str, int]) -> None:
        """Watch ``held``'s write guards (no-op without listeners: nobody would be told);
        ``created_at``: the zxid each node was created at, where known (those are watched by one
        request, the others read each). Its other nodes created by the same multi as a guard
        ride on that request: no request of their own, and the release need not read them
        back; their removal is not reported."""
        if not self._listeners:
            return
        paths = write_guards(held)
        if not paths:
            return
        zxids = {created_at[p] for p in paths if created_at.get(p)}
        guards = set(paths)
        paths += [
            i.lock_id
            for i in held.locks
            if i.lock_id not in guards and created_at.get(i.lock_id) in zxids
        ]
        with self._guard:
            self._nodes.update(dict.fromkeys(paths, (held, ASKED)))
        self._queue.put((held, paths, created_at))
        with self._guard:
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._set_watches, name="sparklock-lock-watches", daemon=True
                )
                self._worker.start()

    def _set_watches(self) -> None:
        """The worker: sets the watches handed to it; ends after a while with nothing to do
        (``watch`` starts another)."""
        while True:
            try:
                batches = [self._queue.get(timeout=WORKER_IDLE)]
            except queue.Empty:
                with self._guard:
                    if self._queue.empty():
                        self._worker = None
                        return
                continue
            while not self._queue.empty():
                batches.append(self._queue.get_nowait())
            self._ask_all(batches)

    def _ask_all(self, batches: list[Batch]) -> None:
        """Set the watches of ``batches``: the nodes whose creation zxid is known by one
        ``setWatches`` per zxid, the others by a read each; then take the answers here (what
        kazoo's completion thread would do, without handing each over to it)."""
        asked: list[tuple[Callable[[IAsyncResult], None], IAsyncResult]] = []
        for held, paths, created_at in batches:
            with self._guard:
                paths = [p for p in paths if self._state(held, p) is not None]  # not released
            data = {i.lock_id: i.data for i in held.locks} if paths else {}
            by_zxid: dict[int, list[str]] = {}
            for path in paths:
                by_zxid.setdefault(created_at.get(path, 0), []).append(path)
            for zxid, group in by_zxid.items():
                if zxid:
                    answer = self._ask_many(held, zxid, group, data)
                    if answer is not None:
                        asked.append((partial(self._many_answered, held, group, data), answer))
                    continue
                for path in group:
                    answer = self._ask(held, path, data[path])
                    if answer is not None:
                        asked.append((partial(self._answered, held, path, data[path]), answer))
        deadline = time.monotonic() + ANSWER_WAIT
        for take, answer in asked:
            if answer.wait(max(0.0, deadline - time.monotonic())):
                take(answer)
            else:
                answer.rawlink(take)

    def ours(self, held: HeldLocks) -> tuple[list[str], list[LockInfo]]:
        """``held``'s nodes its watches vouch for (read back carrying its data, nothing reported
        since), and the locks no watch answers for (not watched, not answered yet, failed, or
        looked at again): those are read.

        A watch vouches only while its watcher is still in kazoo's table: kazoo takes it out on
        its connection thread when it reads the node's event (or forgets every watch when the
        connection drops), before handing the event on. A node whose event is read but not yet
        handled is read back, as one whose event is still on the wire would be by a read before
        the delete; no thread hand-off waits for kazoo's callback thread."""
        with self._guard:
            tracked = any(self._state(held, i.lock_id) is not None for i in held.locks)
        found = self._kazoo_watchers() if tracked else None
        if found is None:  # no client now: the release reads instead
            return [], list(held.locks)
        table, chroot = found
        known: list[str] = []
        unknown: list[LockInfo] = []
        with self._guard:
            for info in held.locks:
                path = info.lock_id
                state = self._state(held, path)
                if state == WATCHED and self._watchers.get(path) in table.get(chroot + path, ()):
                    known.append(path)
                elif state != REMOVED:
                    unknown.append(info)
        return known, unknown

    def forget(self, held: HeldLocks) -> None:
        """``held`` is released or lost: later events on its paths are not its own. Its
        watchers leave kazoo's table too, so the events of its own deletes are dropped there
        instead of being handed to kazoo's callback thread."""
        with self._guard:
            watchers = []
            for info in held.locks:
                if self._state(held, info.lock_id) is not None:
                    del self._nodes[info.lock_id]
                    watchers.append((info.lock_id, self._watchers.pop(info.lock_id, None)))
        if watchers:
            self._drop_watchers(watchers)

    def _drop_watchers(self, watchers: list[tuple[str, Callable | None]]) -> None:
        found = self._kazoo_watchers()
        if found is None:  # no client: its watchers went with it
            return
        table, chroot = found
        for path, watcher in watchers:
            registered = table.get(chroot + path) if watcher is not None else None
            if registered is not None:
                registered.discard(watcher)

    def _kazoo_watchers(self) -> tuple[dict, str] | None:
        """kazoo's table of data watchers (keyed by chrooted path) and the chroot; None without
        a client."""
        try:
            client = self._transport.client()
        except Exception:  # noqa: BLE001 - no client now
            return None
        return client._data_watchers, client.chroot or ""

    def _state(self, held: HeldLocks, path: str) -> str | None:
        """Under the guard: where ``held``'s node at ``path`` stands (None: not watched)."""
        entry = self._nodes.get(path)
        return entry[1] if entry is not None and entry[0] is held else None

    def _mark(self, held: HeldLocks, path: str, state: str) -> bool:
        with self._guard:
            if self._state(held, path) is None:
                return False  # forgotten, or the path names a later set's node now
            self._nodes[path] = (held, state)
            return True

    def watch_one(self, held: HeldLocks, path: str, data: LockData) -> None:
        """Read ``path`` with a watch: the answer says whether the node is still ours (it
        carries ``data``), the watch when that stops being so."""
        answer = self._ask(held, path, data)
        if answer is not None:
            answer.rawlink(partial(self._answered, held, path, data))

    def _ask(self, held: HeldLocks, path: str, data: LockData) -> IAsyncResult | None:
        """Send the watched read of ``path``; its answer to come (None: not sent, or ``held``
        is already released)."""
        watcher = partial(self._fired, held, path, data)
        with self._guard:
            if self._state(held, path) is None:
                return None
            self._watchers[path] = watcher
        try:
            return self._transport.client().get_async(path, watch=watcher)
        except Exception as e:  # noqa: BLE001 - the session's own loss handling covers it
            log.debug("sparklock: not watching %s: %s", path, e)
            return None

    def _ask_many(
        self, held: HeldLocks, zxid: int, paths: list[str], data: Mapping[str, LockData]
    ) -> IAsyncResult | None:
        """One ``setWatches`` for ``paths`` of ``held``, all created at ``zxid``: each watched
        unless gone or changed since, which its event says at once."""
        watchers = {}
        with self._guard:
            for path in paths:
                if self._state(held, path) is not None:
                    watcher = partial(self._fired, held, path, data[path])
                    watchers[path] = self._watchers[path] = watcher
        if not watchers:
            return None
        try:
            return set_watches(self._transport.client(), zxid, watchers)
        except Exception as e:  # noqa: BLE001 - the session's own loss handling covers it
            log.debug("sparklock: not watching %s: %s", ", ".join(paths), e)
            return None

    def _many_answered(
        self, held: HeldLocks, paths: list[str], data: Mapping[str, LockData], answer
    ) -> None:
        if answer.successful():
            with self._guard:  # the events that came first (gone, changed since) stand
                for path in paths:
                    if self._state(held, path) == ASKED:
                        self._nodes[path] = (held, WATCHED)
            return
        if isinstance(answer.exception, (ConnectionLoss, SessionExpiredError)):
            return  # kazoo handed every watcher a NONE event: each reads again, reconnected
        log.debug("sparklock: setWatches refused (%r): reading each node", answer.exception)
        with self._guard:
            watchers = [(p, self._watchers.get(p)) for p in paths if self._state(held, p) == ASKED]
        self._drop_watchers(watchers)
        for path, _ in watchers:
            self.watch_one(held, path, data[path])

    def _answered(self, held: HeldLocks, path: str, data: LockData, answer) -> None:
        if not answer.successful():
            if isinstance(answer.exception, NoNodeError):
                self._gone(held, path)  # before the watch was set
            elif isinstance(answer.exception, ConnectionLoss) and self._state(held, path) in (
                ASKED,
                CHECKING,
            ):
                self.watch_one(held, path, data)  # sent again once reconnected
            return  # else it stays asked: the release reads the node back
        if LockData.decode(answer.get()[0]) != data:
            self._gone(held, path)  # the name is another lock's now
            return
        with self._guard:  # an event that came first (the node went meanwhile) stands
            if self._state(held, path) in (ASKED, CHECKING):
                self._nodes[path] = (held, WATCHED)

    def _fired(self, held: HeldLocks, path: str, data: LockData, event: WatchedEvent) -> None:
        if event.type == EventType.DELETED:
            self._gone(held, path)
        elif self._mark(held, path, CHECKING):
            # written into (or re-created) since, or the connection dropped (kazoo then forgets
            # every watch): look again, once reconnected
            self.watch_one(held, path, data)

    def _gone(self, held: HeldLocks, path: str) -> None:
        self._mark(held, path, REMOVED)
        self._removed(held, path)

    def _removed(self, held: HeldLocks, path: str) -> None:
        if held.released or held.lost or not self._live.contains(held):
            return  # released by this manager, or gone with its session (handled there)
        if path not in write_guards(held):
            return  # only read (a rider): the statement goes on, as under Hive
        with self._guard:
            if self._own.pop(path, None) is not None:
                return
            listeners = list(self._listeners)
        # off kazoo's event thread: a listener calls into the JVM
        for listener in listeners:
            threading.Thread(
                target=listener, args=(held, {path}), name="sparklock-lock-removed", daemon=True
            ).start()
