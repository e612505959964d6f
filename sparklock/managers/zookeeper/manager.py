"""The ZooKeeper lock manager: acquire, check, release, list, unlock — the recipe, in one place.

The steps live in the tier below (:mod:`.recipe`: creation, grant check, cleanup, the fair wait,
walks), the requests in the one below that (:mod:`.wire`: the process's one kazoo client, every
request); which implicit sets are alive in which session, in :mod:`.live_sets`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from operator import attrgetter

from ...errors import LockManagerUnavailableError, NotLockedError, UnlockError
from ...locks.model import (
    LockData,
    LockInfo,
    LockRequest,
    LockSettings,
    LockType,
    listing_order,
)
from ...locks.objects import LockObject
from ..backend import ManagerConfig, ManagerSettings
from ..base import HeldLocks, LockManager, Refusal
from ..wait_log import WaitReporter
from .layout import KIND_WORD, counts_below, object_paths
from .live_sets import LiveSets
from .recipe.cleanup import Cleanup
from .recipe.creation import LockNode, NodeCreator
from .recipe.grants import MAX_RESTARTS, GrantSteps, Restart
from .recipe.leftovers import remove_empty
from .recipe.queued import QueuedAcquisition
from .recipe.tree import TreeReader
from .recipe.tree_hints import TreeHints
from .recipe.wait_graph import MAX_LOOK_INTERVAL
from .settings import ZooKeeperSettings
from .side_nodes import SideNodes
from .wire import session
from .wire.clock import clock_of
from .wire.transport import Transport

log = logging.getLogger("sparklock.zookeeper")

#: How long one release attempt waits for a (re)connection before it counts as failed (at most
#: the connection timeout).
RELEASE_CONNECT_WAIT = 2.0


class ZooKeeperLockManager(SideNodes, LockManager):
    """Hive-compatible locks in ZooKeeper, sharing the process's one ZooKeeper client."""

    kind = "zookeeper"

    def __init__(
        self, config: ManagerConfig | None = None, *, settings: LockSettings | None = None
    ) -> None:
        config = config or ManagerSettings("zookeeper")
        super().__init__(settings or config.lock)
        zk = config.backend or ZooKeeperSettings()
        if not isinstance(zk, ZooKeeperSettings):
            raise TypeError(f"a ZooKeeper manager made from a {config.manager} configuration")
        self.zookeeper = zk
        self.quorum = zk.quorum
        self.root = zk.namespace_root
        self._shared = session.acquire_client(
            self.quorum, zk.session_timeout, zk.connection_timeout, zk.security, zk.lease_margin
        )
        self._shared.add_session_listener(self._on_session_lost)
        self._owners = session.owner_registry(self.quorum)
        self.transport = Transport(self._shared, zk.session_timeout + zk.connection_timeout)
        hints = TreeHints(tuple(p for p in self.root.split("/") if p), self._owners)
        self._cleanup = Cleanup(
            self.transport,
            self._owners,
            hints,
            self.root,
            unlock_tries=self.settings.unlock_num_retries,
            release_wait=min(RELEASE_CONNECT_WAIT, zk.connection_timeout),
        )
        creator = NodeCreator(self.transport, self._owners, hints, self._cleanup, self.root)
        self._steps = GrantSteps(self.transport, self._owners, creator, self._cleanup)
        self._tree = TreeReader(self.transport, self._owners, self.root)
        self._live = LiveSets()
        self._side_nodes(self.transport, self.root, self._live)  # markers, waits, presence
        self._shared.add_session_listener(self._presence.on_session_lost)
        self._lock = threading.Lock()
        # the helper modules' state, by reference (what a footprint check looks at)
        self._orphans = self._cleanup.orphans
        self._absent = hints.absent
        self._closed = False

    # -- convenience --------------------------------------------------------------------------
    @classmethod
    def connect(
        cls,
        quorum: str,
        namespace: str = "hive_zookeeper_namespace",
        *,
        settings: LockSettings | None = None,
        session_timeout: float = 30.0,
        connection_timeout: float = 15.0,
    ) -> ZooKeeperLockManager:
        """A manager for ``quorum``/``namespace`` without building a SparkLockConfig."""
        zk = ZooKeeperSettings(
            quorum=quorum,
            namespace=namespace.strip("/"),
            session_timeout=session_timeout,
            connection_timeout=connection_timeout,
        )
        return cls(ManagerSettings("zookeeper", zk, settings or LockSettings()))

    @property
    def shared_client(self) -> session.SharedZooKeeperClient:
        return self._shared

    def check_reachable(self) -> None:
        """The process's client for the quorum, connected (the first connection's diagnosis)."""
        self._shared.ensure_started()

    @property
    def session_id(self) -> int | None:
        return self._shared.session_id

    def __enter__(self) -> ZooKeeperLockManager:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Give back this manager's reference to the shared client (the last one disconnects)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._shared.remove_session_listener(self._on_session_lost)
        self._shared.remove_session_listener(self._presence.on_session_lost)
        if session.release_client(self._shared):
            for held in self._live.lost():
                self._owners.forget(i.lock_id for i in held.locks)
                held.mark_lost("ZooKeeper session closed (lock manager closed)")

    def _check_open(self) -> None:
        """Acquisitions need an open manager (its session listener marks lost locks)."""
        if self._closed:
            raise LockManagerUnavailableError(
                f"the ZooKeeper lock manager for {self.quorum} is closed"
            )

    # -- acquisition --------------------------------------------------------------------------
    def _register(
        self, nodes: Sequence[LockNode], data: LockData, owner: str, generation: int
    ) -> HeldLocks | None:
        """The HeldLocks of granted nodes; None if the session was lost meanwhile."""
        ordered = sorted(nodes, key=attrgetter("index"))
        info = LockInfo.granted
        held = HeldLocks(
            owner,
            data.query_id,
            data.lock_type,
            [info(n.request.obj, n.request.mode, n.data, n.path, owner) for n in ordered],
            self,
            handles=[n.object_path for n in ordered if n.fresh],  # see Cleanup.remove
        )
        if data.lock_type is LockType.EXPLICIT:
            return held  # persistent nodes: a session loss does not take them
        # The lease's session is read before the generation is checked: a lost session bumps
        # the generation before its successor's id reaches the lease, so an unchanged
        # generation means this id is the session the nodes were created in.
        held.lease_epoch = self._shared.lease.term[0] or None
        if not self._live.add(held, generation, self._shared.generation):
            return None
        self._watch_nodes(held, {n.path: n.zxid for n in ordered if n.zxid})
        return held

    def _attempt(
        self, lock_set: Sequence[LockRequest], data: LockData, owner: str
    ) -> HeldLocks | Refusal:
        """The ``retry`` policy's one try: everything or nothing (Hive's)."""
        self._check_open()
        with self.transport.errors("acquiring locks"):
            self._cleanup.sweep_orphans()
            for _ in range(MAX_RESTARTS):
                generation = self._shared.generation
                nodes = self._steps.create(list(enumerate(lock_set)), data, owner)
                try:
                    conflict = self._steps.check(nodes, owner)
                except Restart:
                    self._steps.drop(nodes)
                    continue
                except BaseException:
                    self._steps.drop(nodes)
                    raise
                if conflict is None:
                    held = self._register(nodes, data, owner, generation)
                    if held is not None:
                        return held
                    self._steps.drop(nodes)
                    continue
                node, decision = conflict
                try:
                    holders = self._steps.holders(node.request.obj, decision.blockers)
                finally:
                    self._steps.drop(nodes)
                return Refusal(node.request, holders)
            raise LockManagerUnavailableError(
                f"ZooKeeper {self.quorum}: locks kept disappearing while acquiring them "
                f"({MAX_RESTARTS} attempts)"
            )

    def _acquire_queued(
        self,
        lock_set: Sequence[LockRequest],
        data: LockData,
        owner: str,
        settings: LockSettings,
        cancel: threading.Event | None,
        waiter: WaitReporter,
    ) -> HeldLocks:
        """The ``queue`` policy: wait in line (see :mod:`.queued`)."""
        self._check_open()
        with self.transport.errors("acquiring locks"):
            self._cleanup.sweep_orphans()
            deadline = time.monotonic() + settings.budget
            return QueuedAcquisition(
                self._steps,
                self._register,
                self._shared,
                self.quorum,
                lock_set,
                data,
                owner,
                waiter,
                cancel,
                deadline,
                graph=self._graph,
                look_every=min(settings.retry_interval, MAX_LOOK_INTERVAL),
            ).run()

    # -- session loss -------------------------------------------------------------------------
    def _on_session_lost(self, lost_generation: int, reason: str) -> None:
        """On the shared client's worker thread: the ephemeral locks of that session are gone."""
        for held in self._live.lost(lost_generation):
            self._owners.forget(i.lock_id for i in held.locks)
            held.mark_lost(reason)

    # -- release ------------------------------------------------------------------------------
    def release(self, held: HeldLocks) -> None:
        if held.released:
            return
        live = self._live.pop(held)  # the session it was taken in
        if held.lock_type is LockType.IMPLICIT and (
            held.lost or (live is not None and live != self._shared.generation)
        ):
            # Ephemeral nodes went with their session; their paths may already name new locks.
            self._owners.forget(i.lock_id for i in held.locks)
            self._unwatch(held)
            held.released = True
            return
        with self.transport.errors("releasing locks"):
            ids = [i.lock_id for i in held.locks]
            # Only our own nodes may go: an UNLOCK (anyone's) may have removed them, and a lock
            # below the object node re-created since may carry the same name (sequence numbers
            # start over); deleting it would admit a conflicting lock beside its holder.
            wait = self._cleanup.release_wait  # (not a whole session timeout)
            read = partial(self._tree.still_ours, what="releasing locks", limit=wait)
            try:
                paths = self._owned(held, read if self._shared.connected else None)
            except LockManagerUnavailableError:
                paths = ids  # cannot check: try to delete them all (and report what fails)
            paths = ids if paths == ids else paths
            # object nodes the acquisition created (explicit locks, kept for long, always read)
            fresh = set(held.handles) if held.lock_type is LockType.IMPLICIT else None
            kept: list[str] = []
            tries = self.settings.unlock_num_retries
            mine = counts_below(paths)  # counted once for the removal and the bookkeeping
            failed, err = self._cleanup.remove(paths, tries, fresh, kept, mine)
            if failed:
                generation = self._shared.generation
                if live is not None and not self._live.put_back(held, live, generation):
                    # The session was lost while we tried (out of ``_live`` meanwhile, so
                    # ``_on_session_lost`` did not see it): the nodes went with it.
                    self._owners.forget(paths)
                    held.mark_lost("ZooKeeper session lost while its locks were released")
                    held.released = True
                    return
                raise UnlockError(
                    f"could not release {len(failed)} lock(s) of query {held.query_id} in "
                    f"ZooKeeper {self.quorum} after {tries} "
                    f"attempt(s) ({type(err).__name__ if err else 'error'}: {err}): "
                    + ", ".join(failed)
                )
            self._cleanup.forget(ids, kept, mine if paths is ids else None)
            removed = set(ids) - set(paths)
            if removed:  # the object nodes above them, left empty now (deepest first)
                self._cleanup.cleanup_objects(
                    {a for p in removed for a in object_paths(p) if a.startswith(self.root + "/")}
                )
            if removed and held.lock_type is LockType.IMPLICIT:
                # Hive's UNLOCK semantics: the statement went on without them; say so
                log.warning(
                    "sparklock: %d of the %d lock(s) of query %s were removed by someone else "
                    "while it held them (UNLOCK of the object, or a forced release): it ran "
                    "unprotected from then on",
                    len(removed),
                    len(ids),
                    held.query_id,
                )
            held.released = True
            self._cleanup.sweep_orphans()

    # -- listing and UNLOCK -------------------------------------------------------------------
    def list_locks(
        self, obj: LockObject | None = None, *, descendants: bool = True, waiting: bool = False
    ) -> list[LockInfo]:
        with self.transport.errors("listing locks"):
            infos = self._tree.list_locks(obj, descendants)
            if waiting:
                # a retry request in the middle of an attempt is listed by its lock node
                trying = {(i.data.query_id, i.obj) for i in infos}
                markers = self._markers.listed(obj, descendants)
                infos += [m for m in markers if (m.data.query_id, m.obj) not in trying]
                infos.sort(key=listing_order)
            return infos

    def unlock(
        self,
        obj: LockObject,
        *,
        check: Callable[[Sequence[LockInfo]], None] | None = None,
        explicit_only: bool = False,
    ) -> list[LockInfo]:
        with self.transport.errors("unlocking"):
            infos = self._tree.granted_on(obj, "unlocking")
            if explicit_only:
                infos = [i for i in infos if i.data.lock_type is LockType.EXPLICIT]
            if not infos:
                raise NotLockedError(obj.name, KIND_WORD[obj.kind])
            if check is not None:
                check(infos)  # may refuse: nothing removed (only these nodes would be)
            paths = [i.lock_id for i in infos]
            self._removing(paths)  # its caller fences the holders in this process
            failed, err = self._cleanup.remove(paths, self.settings.unlock_num_retries)
            if failed:
                raise UnlockError(
                    f"could not remove {len(failed)} lock(s) on {obj.name} in ZooKeeper "
                    f"{self.quorum} ({type(err).__name__ if err else 'error'}: {err}): "
                    + ", ".join(failed)
                )
            self._owners.forget(paths)
            return sorted(infos, key=listing_order)

    # -- the write clock ------------------------------------------------------------------------
    def write_clock(self) -> str | None:
        """See :mod:`.clock`: moves when any other client wrote anything to ZooKeeper."""
        try:
            client = self.transport.client()
        except Exception:  # noqa: BLE001 - no client, no reading: re-list
            return None
        return clock_of(client).reading()

    # -- the lease (see .lease) ---------------------------------------------------------------
    def lease_until(self) -> float:
        return self.lease_term()[1] / 1e9

    def lease_term(self) -> tuple[int, int]:
        """The current session and its deadline; ``(0, 0)`` (lapsed) before the first answer."""
        return self._shared.lease.lease()

    def watch_lease(self, listener: Callable[[int, int], None]) -> None:
        self._shared.lease.add_listener(listener)

    # -- maintenance (python -m sparklock stale) ------------------------------------------------
    def leftovers(self) -> list[str]:
        return self.empty_object_nodes()

    def remove_leftovers(self, found: Iterable[str]) -> list[str]:
        return self.remove_empty_object_nodes(found)

    def empty_object_nodes(self) -> list[str]:
        """Object nodes with no children, deepest first (Hive's clean.extra.nodes finds these)."""
        with self.transport.errors("looking for empty nodes"):
            return self._tree.empty_object_nodes()

    def remove_empty_object_nodes(self, paths: Iterable[str]) -> list[str]:
        """Delete the given nodes if still empty (a node in use meanwhile is kept)."""
        return remove_empty(self.transport.client(), self.root, paths)

    def remove_locks(self, infos: Sequence[LockInfo]) -> list[str]:
        """Force-delete specific lock nodes (stale explicit locks); returns what failed."""
        paths = [i.lock_id for i in infos if i.lock_id.startswith(self.root + "/")]
        failed, _ = self._cleanup.remove(paths, self.settings.unlock_num_retries)
        self._owners.forget(p for p in paths if p not in failed)
        return failed
