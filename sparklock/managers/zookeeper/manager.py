"""The ZooKeeper lock manager: acquire, check, release, list, unlock — the recipe, in one place.

The requests live in the rooms beside it: :mod:`.creation` (steps 1 and 2), :mod:`.cleanup`
(step 4), :mod:`.queued` (the fair wait), :mod:`.tree` (walks), :mod:`.transport` (every
request), :mod:`.session` (the process's one kazoo client). The grant check (step 3) and the
bookkeeping of live lock sets stay here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter

from kazoo.exceptions import NoNodeError, NotEmptyError

from ...config import LockSettings, SparkLockConfig
from ...errors import LockManagerUnavailableError, NotLockedError, UnlockError
from ...model import (
    Contender,
    GrantDecision,
    LockData,
    LockInfo,
    LockMode,
    LockRequest,
    LockType,
    compatible,
    decide,
    listing_order,
    owns,
)
from ...objects import LockObject
from ..base import HeldLocks, LockManager, Refusal, _WaitReporter
from . import session
from .cleanup import Cleanup
from .creation import LockNode, NodeCreator
from .layout import KIND_WORD, LOCK_PREFIX, counts_below, deepest_first, parse_lock_name
from .queued import MAX_RESTARTS, QueuedAcquisition, Restart
from .transport import Transport, children_of, data_of, node_data
from .tree import TreeReader
from .tree_hints import TreeHints
from .waiters import Shown, WaitMarkers

#: The name prefix of EXCLUSIVE lock nodes (what a SHARED request can conflict with).
EXCLUSIVE_PREFIX = f"{LOCK_PREFIX}{LockMode.EXCLUSIVE.value}-"

#: How long one release attempt waits for a (re)connection before it counts as failed (at most
#: the connection timeout).
RELEASE_CONNECT_WAIT = 2.0


def _nothing_below(node: LockNode, name: str, children: Sequence[str]) -> bool:
    """Granted at a glance: no lower-sequence sibling that could conflict with ``node``.

    The common case, answered without parsing every sibling (32 threads reading one table leave
    ~32 SHARED siblings to look at per object): a SHARED request conflicts only with EXCLUSIVE
    siblings, so only those are parsed. Anything else goes through the full rule.
    """
    prefix = EXCLUSIVE_PREFIX if node.request.mode is LockMode.SHARED else LOCK_PREFIX
    for child in children:
        if child.startswith(prefix) and child != name:
            parsed = parse_lock_name(child)
            if parsed is not None and parsed.seq < node.seq:
                return False
    return True


@dataclass
class _Live:
    """An implicit lock set and the session its ephemeral nodes belong to."""

    held: HeldLocks
    generation: int


class ZooKeeperLockManager(LockManager):
    """Hive-compatible locks in ZooKeeper, sharing the process's one ZooKeeper client."""

    kind = "zookeeper"

    def __init__(
        self, config: SparkLockConfig | None = None, *, settings: LockSettings | None = None
    ) -> None:
        config = config or SparkLockConfig(manager="zookeeper")
        super().__init__(settings or config.lock)
        self.config = config
        self.quorum = config.zookeeper_quorum
        self.root = config.namespace_root
        self._shared = session.acquire_client(
            self.quorum,
            config.zookeeper_session_timeout,
            config.zookeeper_connection_timeout,
            config.zookeeper_security,
        )
        self._shared.add_session_listener(self._on_session_lost)
        self._owners = session.owner_registry(self.quorum)
        self.transport = Transport(
            self._shared, config.zookeeper_session_timeout + config.zookeeper_connection_timeout
        )
        hints = TreeHints(tuple(p for p in self.root.split("/") if p), self._owners)
        self._cleanup = Cleanup(
            self.transport,
            self._owners,
            hints,
            self.root,
            unlock_tries=self.settings.unlock_num_retries,
            release_wait=min(RELEASE_CONNECT_WAIT, config.zookeeper_connection_timeout),
        )
        self._creator = NodeCreator(self.transport, self._owners, hints, self._cleanup, self.root)
        self._tree = TreeReader(self.transport, self._owners, self.root)
        self._markers = WaitMarkers(self.transport, self.root)
        self._lock = threading.Lock()
        self._live: dict[int, _Live] = {}
        # the rooms' state, by reference (what a footprint check looks at)
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
        config = SparkLockConfig(
            manager="zookeeper",
            zookeeper_quorum=quorum,
            zookeeper_namespace=namespace.strip("/"),
            zookeeper_session_timeout=session_timeout,
            zookeeper_connection_timeout=connection_timeout,
            lock=settings or LockSettings(),
        )
        return cls(config)

    @property
    def shared_client(self) -> session.SharedZooKeeperClient:
        return self._shared

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
        if session.release_client(self._shared):
            with self._lock:
                victims = [e.held for e in self._live.values()]
                self._live.clear()
            for held in victims:
                self._owners.forget(i.lock_id for i in held.locks)
                held.mark_lost("ZooKeeper session closed (lock manager closed)")

    def _check_open(self) -> None:
        """Acquisitions need an open manager (its session listener marks lost locks)."""
        if self._closed:
            raise LockManagerUnavailableError(
                f"the ZooKeeper lock manager for {self.quorum} is closed"
            )

    # -- steps 1, 2 and 4: create and drop lock nodes ------------------------------------------
    def _create(
        self, requests: Sequence[tuple[int, LockRequest]], data: LockData, owner: str
    ) -> list[LockNode]:
        return self._creator.create(requests, data, owner)

    def _drop(self, nodes: Iterable[LockNode]) -> None:
        """Delete the nodes of an attempt that is not going to hold them."""
        nodes = list(nodes)
        if nodes:
            fresh = {n.object_path for n in nodes if n.fresh}
            by_payload: dict[bytes, list[str]] = {}  # one, unless a node was marked acquired
            for n in nodes:
                by_payload.setdefault(n.payload, []).append(n.path)
            for payload, paths in by_payload.items():
                self._cleanup.drop_paths(paths, payload, fresh)

    # -- step 3: the grant check --------------------------------------------------------------
    def _decide(self, node: LockNode, children: Sequence[str], owner: str) -> GrantDecision:
        """Hive's rule among the lock nodes ``children`` of the node's object, owner-aware."""
        name = node.path.rsplit("/", 1)[1]
        if name not in children:
            raise Restart(f"lock node {node.path} disappeared")
        if _nothing_below(node, name, children):
            return GrantDecision(True)
        contenders = []
        for child in children:
            parsed = parse_lock_name(child)
            if parsed is not None:
                contenders.append(Contender(parsed.seq, parsed.mode, f"{node.object_path}/{child}"))
        decision = decide(
            Contender(node.seq, node.request.mode, node.path),
            contenders,
            lambda c: owns(owner, c.key) or self._owners.is_own_explicit(c.key, owner),
        )
        if decision.granted and any(
            c.seq < node.seq and not compatible(c.mode, node.request.mode) for c in contenders
        ):
            # Granted past a conflicting lock of its own owner: a reader elsewhere cannot know
            # that exemption, so the node says it is granted (sparklock.waiting).
            self._mark_acquired(node)
        return decision

    def _mark_acquired(self, node: LockNode) -> None:
        """Write into a granted node that it is (``a=``): SHOW LOCKS anywhere then says
        ACQUIRED and when. Only for nodes that waited or jumped the line: a lock granted at
        once costs no write."""
        if node.data.acquired_ms:
            return
        data = replace(node.data, acquired_ms=int(time.time() * 1000))
        payload = data.encode()
        node.payload = b""  # unknown until the write is answered (cleanup then matches none)
        try:
            self.transport.retrying(
                lambda: self.transport.client().set(node.path, payload), "marking a lock granted"
            )
        except NoNodeError:
            raise Restart(f"lock node {node.path} disappeared") from None
        node.data, node.payload = data, payload

    def _check(
        self, nodes: Sequence[LockNode], owner: str
    ) -> tuple[LockNode, GrantDecision] | None:
        """The first refused node (in lock-set order) and why, or None when all are granted.

        A node numbered 0 is its object's first child ever: nothing can be below it."""
        to_check = [n for n in nodes if n.seq > 0]
        unread = [n for n in to_check if n.siblings is None]  # not read along with the create
        ops = [children_of(n.object_path) for n in unread]
        read = iter(self.transport.read(ops, "checking locks") if ops else ())
        listing = [n.siblings if n.siblings is not None else next(read) for n in to_check]
        for n in to_check:
            n.siblings = None  # read once: later checks read again
        for node, children in zip(to_check, listing, strict=True):
            if not isinstance(children, list):
                raise Restart(f"object node of {node.path} disappeared")
            decision = self._decide(node, children, owner)
            if not decision.granted:
                return node, decision
        return None

    def _holders(self, obj: LockObject, blockers: Sequence[Contender]) -> list[LockInfo]:
        """Name the locks in the way (only ever read on a conflict)."""
        ordered = sorted(blockers, key=lambda c: c.seq)
        datas = self.transport.read([data_of(c.key) for c in ordered], "reading lock holders")
        return [
            LockInfo(obj, c.mode, LockData.decode(data), c.key, self._owners.owner_of(c.key))
            for c, got in zip(ordered, datas, strict=True)
            if (data := node_data(got)) is not None
        ]

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
        with self._lock:
            if self._shared.generation != generation:
                return None
            self._live[id(held)] = _Live(held, generation)
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
                nodes = self._create(list(enumerate(lock_set)), data, owner)
                try:
                    conflict = self._check(nodes, owner)
                except Restart:
                    self._drop(nodes)
                    continue
                except BaseException:
                    self._drop(nodes)
                    raise
                if conflict is None:
                    held = self._register(nodes, data, owner, generation)
                    if held is not None:
                        return held
                    self._drop(nodes)
                    continue
                node, decision = conflict
                try:
                    holders = self._holders(node.request.obj, decision.blockers)
                finally:
                    self._drop(nodes)
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
        waiter: _WaitReporter,
    ) -> HeldLocks:
        """The ``queue`` policy: wait in line (see :mod:`.queued`)."""
        self._check_open()
        with self.transport.errors("acquiring locks"):
            self._cleanup.sweep_orphans()
            deadline = time.monotonic() + settings.budget
            return QueuedAcquisition(self, lock_set, data, owner, waiter, cancel, deadline).run()

    # -- WAITING rows of retry requests (see .waiters) ----------------------------------------
    def _show_waiting(self, shown: object | None, row: LockInfo) -> object | None:
        return self._markers.show(shown if isinstance(shown, Shown) else None, row)

    def _hide_waiting(self, shown: object) -> None:
        if isinstance(shown, Shown):
            self._markers.hide(shown)

    # -- session loss -------------------------------------------------------------------------
    def _on_session_lost(self, lost_generation: int, reason: str) -> None:
        """On the shared client's worker thread: the ephemeral locks of that session are gone."""
        with self._lock:
            victims = [
                key for key, live in self._live.items() if live.generation <= lost_generation
            ]
            lost = [self._live.pop(key).held for key in victims]
        for held in lost:
            self._owners.forget(i.lock_id for i in held.locks)
            held.mark_lost(reason)

    # -- release ------------------------------------------------------------------------------
    def release(self, held: HeldLocks) -> None:
        if held.released:
            return
        with self._lock:
            live = self._live.pop(id(held), None)
        if held.lock_type is LockType.IMPLICIT and (
            held.lost or (live is not None and live.generation != self._shared.generation)
        ):
            # Ephemeral nodes went with their session; their paths may already name new locks.
            self._owners.forget(i.lock_id for i in held.locks)
            held.released = True
            return
        with self.transport.errors("releasing locks"):
            paths = ids = [i.lock_id for i in held.locks]
            if held.lock_type is LockType.EXPLICIT and self._shared.connected:
                try:
                    paths = self._tree.still_ours(held.locks, "releasing locks")
                except LockManagerUnavailableError:
                    pass  # cannot check: try to delete them all (and report what fails)
            # object nodes the acquisition created (explicit locks, kept for long, always read)
            fresh = set(held.handles) if held.lock_type is LockType.IMPLICIT else None
            kept: list[str] = []
            tries = self.settings.unlock_num_retries
            mine = counts_below(paths)  # counted once for the removal and the bookkeeping
            failed, err = self._cleanup.remove(paths, tries, fresh, kept, mine)
            if failed:
                if live is not None:
                    with self._lock:
                        gone = live.generation != self._shared.generation
                        if not gone:
                            self._live[id(held)] = live
                    if gone:
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
        self, obj: LockObject, *, check: Callable[[Sequence[LockInfo]], None] | None = None
    ) -> list[LockInfo]:
        with self.transport.errors("unlocking"):
            infos = self._tree.locks_on(obj, "unlocking")
            if not infos:
                raise NotLockedError(obj.name, KIND_WORD[obj.kind])
            if check is not None:
                check(infos)  # may refuse: nothing removed (only these nodes would be)
            paths = [i.lock_id for i in infos]
            failed, err = self._cleanup.remove(paths, self.settings.unlock_num_retries)
            if failed:
                raise UnlockError(
                    f"could not remove {len(failed)} lock(s) on {obj.name} in ZooKeeper "
                    f"{self.quorum} ({type(err).__name__ if err else 'error'}: {err}): "
                    + ", ".join(failed)
                )
            self._owners.forget(paths)
            return sorted(infos, key=listing_order)

    # -- maintenance (python -m sparklock stale) ------------------------------------------------
    def empty_object_nodes(self) -> list[str]:
        """Object nodes with no children, deepest first (Hive's clean.extra.nodes finds these)."""
        with self.transport.errors("looking for empty nodes"):
            return self._tree.empty_object_nodes()

    def remove_empty_object_nodes(self, paths: Iterable[str]) -> list[str]:
        """Delete the given nodes if still empty (a node in use meanwhile is kept)."""
        removed = []
        client = self.transport.client()
        for path in deepest_first(paths):
            if path == self.root or not path.startswith(self.root + "/"):
                continue  # never outside the namespace
            try:
                client.delete(path)
                removed.append(path)
            except (NoNodeError, NotEmptyError):
                pass
        return removed

    def remove_locks(self, infos: Sequence[LockInfo]) -> list[str]:
        """Force-delete specific lock nodes (stale explicit locks); returns what failed."""
        paths = [i.lock_id for i in infos if i.lock_id.startswith(self.root + "/")]
        failed, _ = self._cleanup.remove(paths, self.settings.unlock_num_retries)
        self._owners.forget(p for p in paths if p not in failed)
        return failed
