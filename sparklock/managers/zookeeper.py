"""The ZooKeeper lock manager: Hive's ZooKeeperHiveLockManager layout at a constant round-trip cost.

Layout (identical to Hive 2.3.10, so Hive and Spark see and respect each other's locks)::

    /<namespace>/<db>[/<table>[/k1=v1[/k2=v2...]]]/LOCK-SHARED-0000000007

Object nodes are persistent and empty; a lock is a sequential child ``LOCK-SHARED-<seq10>`` or
``LOCK-EXCLUSIVE-<seq10>`` whose data is ``queryId:lockTime:IMPLICIT|EXPLICIT:queryStr:clientIp``.
Statement (implicit) locks are EPHEMERAL_SEQUENTIAL, ``LOCK TABLE`` (explicit) ones
PERSISTENT_SEQUENTIAL. A lock is granted when no lower-sequence sibling conflicts with it
(:func:`sparklock.model.decide`, Hive's rule, made owner-aware).

Where Hive spends three sequential requests per object each way, a lock set costs a constant
number of round trips here whatever its size:

1. one batched read of the "container" nodes' children: which object nodes exist;
2. one ``multi`` creating the missing object nodes (parents first) and every lock node;
3. one batched ``getChildren`` of the object nodes whose lock got a sequence number above 0 (a
   node numbered 0 is its object's first child ever: nothing can be below it), then ``decide()``;
4. release: one ``multi`` deleting the lock nodes, one ``multi`` deleting the object nodes left
   empty, deepest first (shrunk and retried when another lock keeps one of them busy).

The ``retry`` policy is Hive's (on conflict drop everything, sleep, retry); the ``queue`` policy is
fair: it keeps its place in line on the first conflicting object, drops what it had after it, and
sleeps on a ZooKeeper watch on the nearest conflicting lock below its own, so a release wakes the
next waiter with a single notification.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import Create, Delete
from kazoo.security import OPEN_ACL_UNSAFE

from ..config import LockSettings, SparkLockConfig
from ..errors import (
    InvalidObjectError,
    LockManagerUnavailableError,
    NotLockedError,
    SparkLockError,
    UnlockError,
)
from ..model import (
    Contender,
    GrantDecision,
    LockData,
    LockInfo,
    LockMode,
    LockRequest,
    LockType,
    decide,
    listing_order,
    owns,
)
from ..objects import FACET_PREFIX, LockObject, ObjectKind, unescape_path_name
from . import zkclient
from .base import (
    AcquisitionCancelled,
    HeldLocks,
    LockManager,
    Refusal,
    _WaitReporter,
    conflict_error,
)
from .zkclient import CHILDREN, DATA, TRANSIENT_ERRORS

log = logging.getLogger("sparklock.zookeeper")

LOCK_PREFIX = "LOCK-"
_LOCK_NAME = re.compile(r"^LOCK-(SHARED|EXCLUSIVE)-(-?\d+)$")

#: Bytes of operations per write ``multi`` (ZooKeeper refuses requests above jute.maxbuffer, 1 MB).
MULTI_BYTES = 512 * 1024
#: How often a create is redone when a concurrent create/cleanup changed the tree under it.
MAX_TREE_RACES = 50
#: How often an acquisition starts over after its session was lost or its node was removed.
MAX_RESTARTS = 5
#: Cleanup multis tried before falling back to one delete per object node.
CLEANUP_MULTIS = 3
#: Object nodes remembered as deleted by us (so the next lock set can create them unread).
ABSENT_HINTS = 1024
#: How long one release attempt waits for a (re)connection before it counts as failed (at most
#: the connection timeout).
RELEASE_CONNECT_WAIT = 2.0
#: A queued waiter looks at its cancel flag and deadline this often (no ZooKeeper traffic).
WAIT_SLICE = 0.05

_KIND_WORD = {
    ObjectKind.DATABASE: "Database",
    ObjectKind.TABLE: "Table",
    ObjectKind.PARTITION: "Partition",
    ObjectKind.FACET: "Table",
}


def parse_lock_name(name: str) -> tuple[LockMode, int] | None:
    """``LOCK-SHARED-0000000005`` -> (SHARED, 5); None for anything that is not a lock node."""
    m = _LOCK_NAME.match(name)
    if not m:
        return None
    return LockMode(m.group(1)), int(m.group(2))


def object_from_components(components: Sequence[str]) -> LockObject:
    """The object of a znode path below the namespace (components are escaped names).

    Built from the components rather than through ``LockObject.parse`` of a display name, which
    would split a database or table name containing ``@``."""
    if not components:
        raise InvalidObjectError("the namespace root is not a lock object")
    database = unescape_path_name(components[0])
    if len(components) == 1:
        return LockObject(database)
    table = unescape_path_name(components[1])
    if len(components) == 3 and components[2].startswith(FACET_PREFIX) and "=" not in components[2]:
        return LockObject(
            database, table, facet=unescape_path_name(components[2][len(FACET_PREFIX) :])
        )
    spec = []
    for comp in components[2:]:
        if "=" not in comp:
            raise InvalidObjectError(f"znode {comp!r} is not a partition component")
        key, value = comp.split("=", 1)
        spec.append((unescape_path_name(key), unescape_path_name(value)))
    return LockObject(database, table, tuple(spec))


_last_lock_time = 0
_lock_time_lock = threading.Lock()


def _unique_lock_time() -> int:
    """Epoch millis, strictly increasing in this process: our node data is then unique, which is
    how a create whose reply was lost (ConnectionLoss) finds its nodes again."""
    global _last_lock_time
    with _lock_time_lock:
        now = int(time.time() * 1000)
        _last_lock_time = max(now, _last_lock_time + 1)
        return _last_lock_time


@dataclass
class _Node:
    """One lock node of ours."""

    index: int  # position in the lock set
    request: LockRequest
    path: str  # the created znode (sequence suffix included)
    seq: int
    data: LockData  # as stored (decoded back from the bytes written)
    payload: bytes  # the bytes written
    fresh: bool = False  # its object node was created by the same multi

    @property
    def object_path(self) -> str:
        return self.path.rsplit("/", 1)[0]


class _Raced(Exception):
    """The tree changed between our read and our multi (NodeExists / NoNode): redo."""


class _Restart(Exception):
    """Our locks were taken away (session lost, UNLOCK by someone): start the set over."""


class _NotConnected(ConnectionLoss):
    """A write that was not even sent: no connection within the wait."""


class _Cancelled(Exception):
    pass


class _Deadline(Exception):
    pass


@dataclass
class _Live:
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
        self._root_parts = tuple(p for p in self.root.split("/") if p)
        self._op_timeout = config.zookeeper_session_timeout + config.zookeeper_connection_timeout
        self._release_wait = min(RELEASE_CONNECT_WAIT, config.zookeeper_connection_timeout)
        self._shared = zkclient.acquire_client(
            self.quorum, config.zookeeper_session_timeout, config.zookeeper_connection_timeout
        )
        self._shared.add_session_listener(self._on_session_lost)
        self._owners = zkclient.owner_registry(self.quorum)
        self._lock = threading.Lock()
        self._live: dict[int, _Live] = {}
        self._orphans: dict[str, bytes] = {}  # our nodes a failed cleanup left; retried later
        self._closed = False
        # What this process knows about the tree without reading it (only ever a guess that a
        # multi verifies: a wrong one costs the multi, then the read): the namespace root
        # exists once a create succeeded; object nodes we deleted stay absent until seen again.
        self._root_known = False
        self._absent: OrderedDict[str, None] = OrderedDict()

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
    def shared_client(self) -> zkclient.SharedZooKeeperClient:
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
        if zkclient.release_client(self._shared):
            with self._lock:
                victims = [e.held for e in self._live.values()]
                self._live.clear()
            for held in victims:
                self._owners.forget(i.lock_id for i in held.locks)
                held.mark_lost("ZooKeeper session closed (lock manager closed)")

    # -- ZooKeeper plumbing -------------------------------------------------------------------
    def _client(self):
        return self._shared.ensure_started()

    def _check_open(self) -> None:
        """Acquisitions need an open manager (its session listener marks lost locks)."""
        if self._closed:
            raise LockManagerUnavailableError(
                f"the ZooKeeper lock manager for {self.quorum} is closed"
            )

    def _unavailable(self, what: str, exc: BaseException | None) -> LockManagerUnavailableError:
        detail = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
        return LockManagerUnavailableError(
            f"ZooKeeper {self.quorum} did not answer while {what} within "
            f"{self._op_timeout:g} s{detail}"
        )

    @contextlib.contextmanager
    def _zk_errors(self, what: str) -> Iterator[None]:
        """Kazoo failures that survived the retries become LOCK_MANAGER_UNAVAILABLE."""
        try:
            yield
        except SparkLockError:
            raise
        except (KazooException, KazooTimeoutError, OSError) as exc:
            raise LockManagerUnavailableError(
                f"ZooKeeper {self.quorum}: {what} failed ({type(exc).__name__}: {exc})"
            ) from exc

    def _retrying(self, fn, what: str, limit: float | None = None):
        """Run ``fn`` until it does not fail transiently (waiting for the connection between)."""
        end = time.monotonic() + (self._op_timeout if limit is None else limit)
        delay = 0.02
        while True:
            try:
                return fn()
            except TRANSIENT_ERRORS as exc:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    raise self._unavailable(what, exc) from exc
                log.debug("sparklock: %s failed transiently (%r); retrying", what, exc)
                self._shared.wait_connected(min(remaining, 1.0))
                time.sleep(min(delay, max(0.0, end - time.monotonic())))
                delay = min(delay * 2, 0.5)

    def _read(self, ops: Sequence[tuple[str, str]], what: str) -> list:
        return self._retrying(lambda: self._shared.read(ops, self._op_timeout), what)

    def _commit(self, ops: Sequence[tuple], what: str, connect_wait: float | None = None) -> list:
        """One write multi; ``ops``: ("create", path, data, ephemeral, sequence), ("delete", path).

        Issued only while connected (waiting up to ``connect_wait``), so that a request can never
        linger in kazoo's queue and run after we gave up on it. Transient failures raise (the
        caller decides whether a retry is safe); per-operation failures come back in the results.
        """
        client = self._client()
        wait = self._op_timeout if connect_wait is None else connect_wait
        if not self._shared.wait_connected(wait):
            raise _NotConnected(f"not connected to ZooKeeper {self.quorum} within {wait:g} s")
        if not hasattr(client, "_call"):  # pragma: no cover - a kazoo without the private call
            tx = client.transaction()
            for op in ops:
                if op[0] == "create":
                    _, path, data, ephemeral, sequence = op
                    tx.create(path, data, ephemeral=ephemeral, sequence=sequence)
                else:
                    tx.delete(op[1])
            return tx.commit_async().get(timeout=self._op_timeout)
        # The multi's operations built directly: kazoo's transaction() normalises and checks
        # every path again (~10 us an operation, most of a 10,000-partition lock set's time).
        chroot = client.chroot or ""
        acl = client.default_acl or OPEN_ACL_UNSAFE
        requests = []
        for op in ops:
            path = chroot + op[1] if chroot else op[1]
            if op[0] == "create":
                flags = (1 if op[3] else 0) | (2 if op[4] else 0)
                requests.append(Create(path, op[2], acl, flags))
            else:
                requests.append(Delete(path, -1))
        async_result = client.handler.async_result()
        client._call(zkclient.WriteMulti(requests), async_result)  # results come unchrooted
        return async_result.get(timeout=self._op_timeout)

    def _path(self, obj: LockObject) -> str:
        return obj.path(self.root)

    def _components(self, path: str) -> tuple[str, ...]:
        return tuple(p for p in path[len(self.root) :].split("/") if p)

    # -- steps 1 and 2: create ----------------------------------------------------------------
    def _create(
        self,
        requests: Sequence[tuple[int, LockRequest]],
        data: LockData,
        owner: str,
    ) -> list[_Node]:
        """Create one lock node per request, and the missing object nodes, in one multi."""
        using: set[str] = set()  # every object node the set needs, announced to releases
        for _, request in requests:
            path = self._path(request.obj)
            while len(path) > len(self.root) and path not in using:
                using.add(path)
                path = path.rpartition("/")[0]
        self._owners.hold(using)
        try:
            return self._create_held(requests, data, owner)
        finally:
            self._owners.unhold(using)

    def _create_held(
        self, requests: Sequence[tuple[int, LockRequest]], data: LockData, owner: str
    ) -> list[_Node]:
        ephemeral = data.lock_type is LockType.IMPLICIT
        guess = True
        for _ in range(MAX_TREE_RACES):
            node_data = replace(data, lock_time_ms=_unique_lock_time())
            payload = node_data.encode()
            stored = LockData.decode(payload)
            ops, fresh, involved, guessed = self._create_ops(requests, payload, ephemeral, guess)
            try:
                created = self._commit_creates(ops, payload)
            except _Raced:
                if guessed:
                    with self._lock:
                        self._absent.clear()
                guess = False
                continue
            with self._lock:
                self._root_known = True
                for hint in [h for h in self._absent if tuple(h[1:].split("/")) in involved]:
                    del self._absent[hint]  # it exists now
            nodes = []
            for i, (index, request) in enumerate(requests):
                node = _Node(index, request, created[i], int(created[i][-10:]), stored, payload)
                node.fresh = node.object_path in fresh
                nodes.append(node)
            self._owners.add((n.path for n in nodes), owner, data.lock_type)
            return nodes
        raise LockManagerUnavailableError(
            f"ZooKeeper {self.quorum}: the lock tree kept changing under "
            f"{MAX_TREE_RACES} attempts to create lock nodes"
        )

    def _create_ops(
        self,
        requests: Sequence[tuple[int, LockRequest]],
        payload: bytes,
        ephemeral: bool,
        guess: bool = True,
    ) -> tuple[list[tuple], set[str], set[tuple[str, ...]], bool]:
        """Step 1 (which object nodes exist) and the ordered operations of step 2.

        Returns the operations, the object nodes they create, every object node involved (as
        path components), and whether step 1 was answered from what this process knows
        instead of a read: every
        node either holds a lock of this process below it (it exists) or was deleted by us and
        not seen since (it is absent). The multi then verifies the guess (NodeExists / NoNode
        fail it atomically, and the caller redoes it with a read).
        """
        needed: set[tuple[str, ...]] = set()
        all_parts = [self._root_parts + request.obj.components for _, request in requests]
        order: Sequence[int] = range(len(all_parts))
        if any(all_parts[k] > all_parts[k + 1] for k in range(len(all_parts) - 1)):
            order = sorted(order, key=all_parts.__getitem__)  # lock sets normally come sorted
        for parts in all_parts:
            for depth in range(len(parts), 0, -1):
                prefix = parts[:depth]
                if prefix in needed:
                    break  # and so are its own prefixes
                needed.add(prefix)
        existing: set[tuple[str, ...]] | None = self._known_existing(needed) if guess else None
        guessed = existing is not None
        if existing is None:
            containers = sorted({parts[:-1] for parts in needed})
            listing = self._read(
                [(CHILDREN, "/" + "/".join(c)) for c in containers], "reading the lock tree"
            )
            existing = set()
            for container, children in zip(containers, listing, strict=True):
                if isinstance(children, list):
                    existing.update(container + (child,) for child in children)
                elif not isinstance(children, NoNodeError):
                    raise children
        # In lock-set order (parents sort before children): each request's missing object
        # nodes, parents first, then its lock. So an object's lock comes before its child
        # object nodes, and a fresh object's lock is its first child (sequence 0: nothing to
        # check).
        ops: list[tuple] = []
        fresh: set[str] = set()
        present = set(existing)
        for i in order:
            parts, request = all_parts[i], requests[i][1]
            missing = []
            depth = len(parts)
            while depth > 0 and parts[:depth] not in present:
                missing.append(parts[:depth])
                depth -= 1
            for prefix in reversed(missing):
                present.add(prefix)
                path = "/" + "/".join(prefix)
                fresh.add(path)
                ops.append((("create", path, b"", False, False), -1))
            path = "/" + "/".join(parts) + f"/{LOCK_PREFIX}{request.mode.value}-"
            ops.append((("create", path, payload, ephemeral, True), i))
        return ops, fresh, needed, guessed

    def _known_existing(self, needed: Iterable[tuple[str, ...]]) -> set[tuple[str, ...]] | None:
        """Which of ``needed`` exist, if this process knows for every one of them; else None."""
        existing: set[tuple[str, ...]] = set()
        with self._lock:
            if not self._absent and not self._root_known:
                return None
            for parts in needed:
                path = "/" + "/".join(parts)
                if parts == self._root_parts:
                    if not self._root_known:
                        return None
                    existing.add(parts)
                elif self._owners.local_count(path) > 0:
                    existing.add(parts)  # a lock of ours below it: it exists
                elif not any(
                    "/" + "/".join(parts[:depth]) in self._absent
                    for depth in range(len(self._root_parts) + 1, len(parts) + 1)
                ):
                    return None
        return existing

    def _note_absent(self, deleted: Iterable[str]) -> None:
        """Remember object nodes we deleted (the topmost ones: their subtrees went with them)."""
        deleted = set(deleted)
        tops = [p for p in deleted if p.rsplit("/", 1)[0] not in deleted]
        if not tops:
            return
        with self._lock:
            for p in tops:
                self._absent[p] = None
                self._absent.move_to_end(p)
            while len(self._absent) > ABSENT_HINTS:
                self._absent.popitem(last=False)

    def _commit_creates(self, ops: list[tuple], payload: bytes) -> dict[int, str]:
        """Commit the creates (one multi per MULTI_BYTES); request index -> created lock path."""
        created: dict[int, str] = {}
        try:
            for chunk in _chunks(ops):
                try:
                    results = self._commit([op for op, _ in chunk], "creating lock nodes")
                except _NotConnected as exc:
                    raise self._unavailable("creating lock nodes", exc) from exc
                except TRANSIENT_ERRORS as exc:
                    found = self._find_uncertain(chunk, payload, exc)
                    if found is None:
                        raise _Raced() from exc
                    created.update(found)
                    continue
                failure = _multi_failure(results)
                if failure is not None:
                    if isinstance(failure, (NodeExistsError, NoNodeError)):
                        raise _Raced()
                    raise failure
                for (_, index), result in zip(chunk, results, strict=True):
                    if index >= 0:
                        created[index] = result
        except BaseException:
            self._drop_paths(created.values(), payload)  # earlier chunks of this set
            raise
        return created

    def _find_uncertain(
        self, chunk: list[tuple], payload: bytes, exc: BaseException
    ) -> dict[int, str] | None:
        """A create multi whose outcome is unknown: find its lock nodes by their unique data."""
        log.warning("sparklock: creating lock nodes failed (%r); checking what was created", exc)
        locks = [(op, index) for op, index in chunk if index >= 0]
        parents = [op[1].rsplit("/", 1)[0] for op, _ in locks]
        listing = self._read([(CHILDREN, p) for p in parents], "recovering a lock create")
        candidates: list[tuple[int, str]] = []
        for (op, index), parent, children in zip(locks, parents, listing, strict=True):
            if not isinstance(children, list):
                continue
            prefix = op[1].rsplit("/", 1)[1]
            candidates.extend((index, f"{parent}/{c}") for c in children if c.startswith(prefix))
        datas = self._read([(DATA, p) for _, p in candidates], "recovering a lock create")
        found = {
            index: path
            for (index, path), got in zip(candidates, datas, strict=True)
            if isinstance(got, tuple) and got[0] == payload
        }
        if len(found) == len(locks):
            return found
        if found:  # part of an atomic multi survived: ephemeral ones died with a session
            self._drop_paths(found.values(), payload)
        return None

    # -- step 3: the grant check --------------------------------------------------------------
    def _contenders(self, object_path: str, children: Sequence[str]) -> list[Contender]:
        out = []
        for child in children:
            parsed = parse_lock_name(child)
            if parsed is not None:
                out.append(Contender(parsed[1], parsed[0], f"{object_path}/{child}"))
        return out

    def _decide(self, node: _Node, children: Sequence[str], owner: str) -> GrantDecision:
        if node.path.rsplit("/", 1)[1] not in children:
            raise _Restart(f"lock node {node.path} disappeared")
        mine = Contender(node.seq, node.request.mode, node.path)
        return decide(
            mine,
            self._contenders(node.object_path, children),
            lambda c: owns(owner, c.key) or self._owners.is_own_explicit(c.key, owner),
        )

    def _check(self, nodes: Sequence[_Node], owner: str) -> tuple[_Node, GrantDecision] | None:
        """The first refused node (in lock-set order) and why, or None when all are granted."""
        to_check = [n for n in nodes if n.seq > 0]
        listing = self._read([(CHILDREN, n.object_path) for n in to_check], "checking locks")
        for node, children in zip(to_check, listing, strict=True):
            if not isinstance(children, list):
                raise _Restart(f"object node of {node.path} disappeared")
            decision = self._decide(node, children, owner)
            if not decision.granted:
                return node, decision
        return None

    def _holders(self, obj: LockObject, blockers: Sequence[Contender]) -> list[LockInfo]:
        """Name the locks in the way (only ever read on a conflict)."""
        ordered = sorted(blockers, key=lambda c: c.seq)
        datas = self._read([(DATA, c.key) for c in ordered], "reading lock holders")
        return [
            LockInfo(obj, c.mode, LockData.decode(got[0]), c.key, self._owners.owner_of(c.key))
            for c, got in zip(ordered, datas, strict=True)
            if isinstance(got, tuple)
        ]

    # -- removal ------------------------------------------------------------------------------
    def _remove(
        self,
        paths: Sequence[str],
        tries: int,
        fresh: Collection[str] | None = None,
        kept: list[str] | None = None,
    ) -> tuple[list[str], BaseException | None]:
        """Delete lock nodes and the object nodes they leave empty (Hive deletes those too).

        Fastest path, for lock sets whose object nodes were all created by their own acquisition
        (``fresh``) or still hold other locks of this process: ONE multi deleting the lock nodes
        and the fresh object nodes no other lock of ours is below, without reading (if someone
        else has a node below one of them meanwhile, the multi fails and the next path runs).
        Fast path: read the object nodes' children (one batched read), then ONE multi deleting
        the lock nodes and, deepest first, every object node that only holds what we delete.
        If anything changed in between (the multi fails), fall back to deleting the lock nodes
        alone (retried up to ``tries`` times) and cleaning up separately. Returns what could not
        be deleted and the last error; ``kept`` receives the object nodes left in place because
        another lock or acquisition of this process uses them (see ``_forget``).
        """
        paths = list(dict.fromkeys(paths))
        if not paths:
            return [], None
        objects = list(dict.fromkeys(p.rsplit("/", 1)[0] for p in paths))
        ops = [("delete", p) for p in paths]
        if self._shared.connected and sum(64 + len(p) for p in paths + objects) <= MULTI_BYTES:
            mine = _counts_below(paths)
            predicted = self._predict_empty(objects, fresh, mine) if fresh else None
            if predicted is not None:
                try:
                    more = [("delete", o) for o in predicted]
                    left = self._kept(objects, predicted, mine)
                    if _multi_failure(self._commit(ops + more, "releasing locks")) is None:
                        self._note_absent(predicted)
                        if kept is not None:
                            kept.extend(left)
                        return [], None
                except (*TRANSIENT_ERRORS, KazooException, LockManagerUnavailableError) as exc:
                    log.debug("sparklock: unread release failed (%r); reading first", exc)
            try:
                # a release must not wait out a whole session timeout for the connection (the
                # read would queue in kazoo): fail fast into the bounded, step-by-step deletes
                if not self._shared.wait_connected(self._release_wait):
                    raise _NotConnected(f"not connected to ZooKeeper {self.quorum}")
                listing = self._read([(CHILDREN, o) for o in objects], "releasing locks")
                empty = self._empty_after(paths, objects, listing)
                ops += [("delete", o) for o in empty]
                left = self._kept(objects, empty, mine)
                if _multi_failure(self._commit(ops, "releasing locks")) is None:
                    self._note_absent(empty)
                    if kept is not None:
                        kept.extend(left)
                    return [], None
            except (*TRANSIENT_ERRORS, KazooException, LockManagerUnavailableError) as exc:
                log.debug("sparklock: one-multi release failed (%r); deleting step by step", exc)
        failed, err = self._delete_locks(paths, tries)
        gone = set(paths) - set(failed)
        self._cleanup_objects(dict.fromkeys(p.rsplit("/", 1)[0] for p in paths if p in gone))
        return failed, err

    def _kept(
        self, objects: Sequence[str], deleted: Sequence[str], mine: dict[str, int]
    ) -> list[str]:
        """The object nodes left in place (as decided now) while this process still uses them."""
        gone = set(deleted)
        return [
            obj
            for obj in objects
            if obj not in gone and self._owners.local_busy(obj) > mine.get(obj, 0)
        ]

    def _forget(self, paths: Iterable[str], kept: Sequence[str] = ()) -> None:
        """Forget our deleted lock nodes; clean up the object nodes ``_remove`` kept for other
        locks of this process that have all gone meanwhile.

        Two threads releasing under one node at once each see the other's lock and keep the
        node; the one whose forget leaves the node unused by this process (counted atomically)
        deletes it if it is empty now, as Hive's unlock deletes a node found empty after its
        own delete. No request unless that happens.
        """
        unused = self._owners.forget(paths)
        left = [obj for obj in kept if obj in unused]
        if left:
            self._cleanup_objects(left)

    def _predict_empty(
        self, objects: Sequence[str], fresh: Collection[str], mine: dict[str, int]
    ) -> list[str] | None:
        """The object nodes (deepest first) to delete with ``paths`` without reading, or None
        when one of them is neither fresh nor kept by another lock of this process. ``mine``:
        how many of the lock nodes being deleted are at or below each object node."""
        out = []
        for obj in sorted(objects, key=lambda o: (-o.count("/"), o)):
            if len(self._components(obj)) < 1:
                continue  # never the namespace root
            if self._owners.local_busy(obj) > mine.get(obj, 0):
                continue  # another lock or acquisition of this process is at or below it
            if obj not in fresh:
                return None  # it existed before us: what else is below it needs a read
            out.append(obj)
        return out

    def _empty_after(
        self, paths: Sequence[str], objects: Sequence[str], listing: Sequence
    ) -> list[str]:
        """The object nodes (deepest first) left without children once ``paths`` are deleted."""
        ours: dict[str, set[str]] = {}
        for p in paths:
            parent, name = p.rsplit("/", 1)
            ours.setdefault(parent, set()).add(name)
        children_of = dict(zip(objects, listing, strict=True))
        deleting: set[str] = set()
        out = []
        for obj in sorted(objects, key=lambda o: (-o.count("/"), o)):
            children = children_of.get(obj)
            if not isinstance(children, list) or len(self._components(obj)) < 1:
                continue
            if self._owners.held_count(obj):
                continue  # another thread of this process is about to lock below it
            mine = ours.get(obj, set())
            if all(c in mine or f"{obj}/{c}" in deleting for c in children):
                deleting.add(obj)
                out.append(obj)
        return out

    def _delete_locks(
        self, paths: Sequence[str], tries: int
    ) -> tuple[list[str], BaseException | None]:
        """Delete lock nodes (one multi per chunk; already-gone ones count as deleted).

        Returns what could not be deleted after ``tries`` attempts, and the last error.
        """
        remaining = list(dict.fromkeys(paths))
        last: BaseException | None = None
        delay = 0.05
        for attempt in range(max(1, tries)):
            if not remaining:
                break
            try:
                left = []
                for chunk in _chunks([(("delete", p), 0) for p in remaining]):
                    batch = [op[1] for op, _ in chunk]
                    results = self._commit(
                        [op for op, _ in chunk], "releasing locks", self._release_wait
                    )
                    failure = _multi_failure(results)
                    if failure is None:
                        continue
                    if not isinstance(failure, NoNodeError):
                        last = failure
                        left.extend(batch)
                        continue
                    left.extend(self._delete_each(batch))
                remaining = left
            except TRANSIENT_ERRORS as exc:
                last = exc
            except (LockManagerUnavailableError, KazooException) as exc:
                last = exc
            if remaining and attempt + 1 < tries:
                self._shared.wait_connected(delay)
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        return remaining, last

    def _delete_each(self, paths: Sequence[str]) -> list[str]:
        """Pipelined single deletes; NoNode is success. Returns the failed paths."""
        client = self._client()
        pending = [(p, client.delete_async(p)) for p in paths]
        failed = []
        for path, async_result in pending:
            try:
                async_result.get(timeout=self._op_timeout)
            except NoNodeError:
                pass
            except TRANSIENT_ERRORS:
                raise
            except KazooException:
                failed.append(path)
        return failed

    def _cleanup_objects(self, object_paths: Iterable[str]) -> None:
        """Delete the object nodes that are now empty, deepest first (best effort, like Hive)."""
        candidates = sorted(
            {p for p in object_paths if len(self._components(p)) >= 1},
            key=lambda p: (-p.count("/"), p),
        )
        if not self._shared.connected:
            return  # best effort: the next release of these objects tries again
        try:
            for _ in range(CLEANUP_MULTIS):
                if not candidates:
                    return
                results = self._commit(
                    [("delete", p) for p in candidates], "cleaning up", self._release_wait
                )
                failure = _multi_failure(results)
                if failure is None:
                    return
                k = next(i for i, r in enumerate(results) if r is failure)
                busy = candidates[k]
                if isinstance(failure, NotEmptyError):
                    # still in use: keep it and every ancestor of it
                    candidates = [
                        p for p in candidates if p != busy and not busy.startswith(p + "/")
                    ]
                elif isinstance(failure, NoNodeError):
                    candidates.pop(k)
                else:
                    break
            client = self._client()
            pending = [client.delete_async(p) for p in candidates]
            for async_result in pending:
                with contextlib.suppress(KazooException):
                    async_result.get(timeout=self._op_timeout)
        except (KazooException, SparkLockError) as exc:
            log.debug("sparklock: cleaning up empty lock nodes failed: %r", exc)

    def _drop_paths(
        self,
        paths: Iterable[str],
        payload: bytes | None = None,
        fresh: Collection[str] | None = None,
    ) -> None:
        """Delete lock nodes of a failed or refused attempt; what fails is retried later."""
        paths = list(paths)
        if not paths:
            return
        kept: list[str] = []
        failed, err = self._remove(paths, max(1, self.settings.unlock_num_retries), fresh, kept)
        self._forget((p for p in paths if p not in failed), kept)
        if failed:
            log.error(
                "sparklock: could not remove %d lock node(s) of a failed acquisition (%r): %s; "
                "will retry",
                len(failed),
                err,
                ", ".join(failed[:10]),
            )
            with self._lock:
                for p in failed:
                    self._orphans[p] = payload or b""

    def _drop(self, nodes: Iterable[_Node]) -> None:
        nodes = list(nodes)
        if nodes:
            fresh = {n.object_path for n in nodes if n.fresh}
            self._drop_paths([n.path for n in nodes], nodes[0].payload, fresh)

    def _sweep_orphans(self) -> None:
        """Retry deleting nodes a failed cleanup left behind (only if still carrying our data)."""
        with self._lock:
            if not self._orphans:
                return
            orphans, self._orphans = dict(self._orphans), {}
        try:
            paths = list(orphans)
            datas = self._read([(DATA, p) for p in paths], "removing leftover lock nodes")
            ours = [
                p
                for p, got in zip(paths, datas, strict=True)
                if isinstance(got, tuple) and (not orphans[p] or got[0] == orphans[p])
            ]
            failed, _ = self._remove(ours, 1)
        except (SparkLockError, KazooException, KazooTimeoutError):
            failed = list(orphans)
        self._owners.forget(p for p in orphans if p not in failed)
        with self._lock:
            for p in failed:
                self._orphans.setdefault(p, orphans[p])

    # -- acquisition --------------------------------------------------------------------------
    def _register(self, nodes: Sequence[_Node], data: LockData, owner: str, generation: int):
        """The HeldLocks of granted nodes; None if the session was lost meanwhile."""
        ordered = sorted(nodes, key=lambda n: n.index)
        held = HeldLocks(
            owner,
            data.query_id,
            data.lock_type,
            [LockInfo(n.request.obj, n.request.mode, n.data, n.path, owner) for n in ordered],
            self,
            handles=[n.object_path for n in ordered if n.fresh],  # see _remove
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
        self._check_open()
        with self._zk_errors("acquiring locks"):
            self._sweep_orphans()
            for _ in range(MAX_RESTARTS):
                generation = self._shared.generation
                nodes = self._create(list(enumerate(lock_set)), data, owner)
                try:
                    try:
                        conflict = self._check(nodes, owner)
                    except _Restart:
                        self._drop(nodes)
                        continue
                    if conflict is None:
                        held = self._register(nodes, data, owner, generation)
                        if held is not None:
                            return held
                        self._drop(nodes)
                        continue
                    node, decision = conflict
                    holders = self._holders(node.request.obj, decision.blockers)
                    self._drop(nodes)
                    return Refusal(node.request, holders)
                except BaseException:
                    self._drop(nodes)
                    raise
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
        start = time.monotonic()
        deadline = start + settings.budget
        state = {"attempts": 0, "refusal": None}
        self._check_open()
        with self._zk_errors("acquiring locks"):
            self._sweep_orphans()
            for _ in range(MAX_RESTARTS):
                generation = self._shared.generation
                mine: list[_Node] = []
                try:
                    held = self._queue_once(
                        lock_set, data, owner, deadline, cancel, waiter, generation, mine, state
                    )
                except _Restart as why:
                    log.warning("sparklock: query %s starts over: %s", data.query_id, why)
                    self._drop(mine)
                    continue
                except _Deadline:
                    self._drop(mine)
                    raise conflict_error(
                        state["refusal"], state["attempts"], time.monotonic() - start
                    ) from None
                except _Cancelled:
                    self._drop(mine)
                    raise AcquisitionCancelled(state["refusal"].request.name) from None
                except BaseException:
                    self._drop(mine)
                    raise
                if held is not None:
                    return held
                self._drop(mine)
            raise LockManagerUnavailableError(
                f"ZooKeeper {self.quorum}: locks kept disappearing while acquiring them "
                f"({MAX_RESTARTS} attempts)"
            )

    def _queue_once(
        self,
        lock_set: Sequence[LockRequest],
        data: LockData,
        owner: str,
        deadline: float,
        cancel: threading.Event | None,
        waiter: _WaitReporter,
        generation: int,
        mine: list[_Node],
        state: dict,
    ) -> HeldLocks | None:
        """One pass over the set; ``mine`` collects every node we hold (the caller cleans up)."""
        pending = list(enumerate(lock_set))
        while pending:
            nodes = self._create(pending, data, owner)
            mine.extend(nodes)
            state["attempts"] += 1
            conflict = self._check(nodes, owner)
            if conflict is None:
                break
            node, decision = conflict
            # Keep what is granted before it and our place in line on it; holding places on
            # later objects while waiting could deadlock two sets, so those go.
            later = [n for n in nodes if n.index > node.index]
            self._drop(later)
            for n in later:
                mine.remove(n)
            self._wait_turn(node, decision, owner, deadline, cancel, waiter, generation, state)
            pending = [(i, r) for i, r in pending if i > node.index]
        return self._register(mine, data, owner, generation)

    def _wait_turn(
        self,
        node: _Node,
        decision: GrantDecision,
        owner: str,
        deadline: float,
        cancel: threading.Event | None,
        waiter: _WaitReporter,
        generation: int,
        state: dict,
    ) -> None:
        """Sleep on a watch of the nearest conflicting lock below ours until ours is granted."""
        client = self._client()
        refusal = Refusal(node.request, self._holders(node.request.obj, decision.blockers))
        state["refusal"] = refusal
        waiter.waiting(refusal)
        while not decision.granted:
            nearest = decision.nearest_blocker
            assert nearest is not None
            fired = threading.Event()

            def watch(_event, fired=fired) -> None:
                fired.set()

            stat = self._retrying(
                lambda key=nearest.key: client.exists(key, watch=watch), "watching a lock"
            )
            if stat is not None:
                while not fired.wait(min(WAIT_SLICE, max(0.0, deadline - time.monotonic()))):
                    if cancel is not None and cancel.is_set():
                        raise _Cancelled()
                    if self._shared.generation != generation:
                        raise _Restart("ZooKeeper session lost while waiting")
                    if time.monotonic() >= deadline:
                        state["refusal"] = Refusal(
                            node.request,
                            self._holders(node.request.obj, decision.blockers),
                        )
                        raise _Deadline()
                    waiter.waiting(state["refusal"])
            if cancel is not None and cancel.is_set():
                raise _Cancelled()
            if self._shared.generation != generation:
                raise _Restart("ZooKeeper session lost while waiting")
            (children,) = self._read([(CHILDREN, node.object_path)], "checking locks")
            if not isinstance(children, list):
                raise _Restart(f"object node of {node.path} disappeared")
            decision = self._decide(node, children, owner)
            state["attempts"] += 1
            if not decision.granted and time.monotonic() >= deadline:
                state["refusal"] = Refusal(
                    node.request, self._holders(node.request.obj, decision.blockers)
                )
                raise _Deadline()

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
        with self._zk_errors("releasing locks"):
            paths = [i.lock_id for i in held.locks]
            if held.lock_type is LockType.EXPLICIT and self._shared.connected:
                try:
                    paths = self._still_ours(held.locks)
                except LockManagerUnavailableError:
                    pass  # cannot check: try to delete them all (and report what fails)
            # object nodes the acquisition created (explicit locks, kept for long, always read)
            fresh = set(held.handles) if held.lock_type is LockType.IMPLICIT else None
            kept: list[str] = []
            failed, err = self._remove(paths, self.settings.unlock_num_retries, fresh, kept)
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
                    f"ZooKeeper {self.quorum} after {self.settings.unlock_num_retries} "
                    f"attempt(s) ({type(err).__name__ if err else 'error'}: {err}): "
                    + ", ".join(failed)
                )
            self._forget((i.lock_id for i in held.locks), kept)
            held.released = True
            self._sweep_orphans()

    def _still_ours(self, locks: Sequence[LockInfo]) -> list[str]:
        """Explicit lock nodes still carrying our data (an UNLOCK may have removed ours and the
        object node been re-created since, restarting the sequence numbers)."""
        paths = [i.lock_id for i in locks]
        datas = self._read([(DATA, p) for p in paths], "releasing locks")
        return [
            i.lock_id
            for i, got in zip(locks, datas, strict=True)
            if isinstance(got, tuple) and LockData.decode(got[0]) == i.data
        ]

    # -- listing and UNLOCK -------------------------------------------------------------------
    def list_locks(
        self, obj: LockObject | None = None, *, descendants: bool = True
    ) -> list[LockInfo]:
        with self._zk_errors("listing locks"):
            start = self._path(obj) if obj is not None else self.root
            level = [start]
            # (object path, lock path, mode) of lock nodes whose data the next read fetches
            pending_data: list[tuple[str, str, LockMode]] = []
            infos: list[LockInfo] = []
            while level or pending_data:
                ops = [(CHILDREN, p) for p in level] + [(DATA, lp) for _, lp, _ in pending_data]
                results = self._read(ops, "listing locks")
                for (obj_path, lock_path, mode), got in zip(
                    pending_data, results[len(level) :], strict=True
                ):
                    if not isinstance(got, tuple):
                        continue  # released meanwhile
                    info = self._info(obj_path, lock_path, mode, got[0])
                    if info is not None:
                        infos.append(info)
                next_level: list[str] = []
                found: list[tuple[str, str, LockMode]] = []
                for path, children in zip(level, results[: len(level)], strict=True):
                    if not isinstance(children, list):
                        continue
                    is_object = path != self.root
                    descend = descendants or path == self.root
                    for child in children:
                        parsed = parse_lock_name(child)
                        if parsed is not None:
                            if is_object:
                                found.append((path, f"{path}/{child}", parsed[0]))
                        elif descend:
                            next_level.append(f"{path.rstrip('/')}/{child}")
                level, pending_data = next_level, found
            return sorted(infos, key=listing_order)

    def _info(self, obj_path: str, lock_path: str, mode: LockMode, data: bytes) -> LockInfo | None:
        try:
            obj = object_from_components(self._components(obj_path))
        except InvalidObjectError:
            return None  # a foreign node that names no object
        return LockInfo(
            obj, mode, LockData.decode(data), lock_path, self._owners.owner_of(lock_path)
        )

    def unlock(self, obj: LockObject) -> list[LockInfo]:
        with self._zk_errors("unlocking"):
            path = self._path(obj)
            (children,) = self._read([(CHILDREN, path)], "unlocking")
            locks = []
            if isinstance(children, list):
                for child in children:
                    parsed = parse_lock_name(child)
                    if parsed is not None:
                        locks.append((f"{path}/{child}", parsed[0]))
            datas = self._read([(DATA, p) for p, _ in locks], "unlocking")
            infos = [
                LockInfo(obj, mode, LockData.decode(got[0]), p, self._owners.owner_of(p))
                for (p, mode), got in zip(locks, datas, strict=True)
                if isinstance(got, tuple)
            ]
            if not infos:
                raise NotLockedError(obj.name, _KIND_WORD[obj.kind])
            failed, err = self._remove([i.lock_id for i in infos], self.settings.unlock_num_retries)
            if failed:
                raise UnlockError(
                    f"could not remove {len(failed)} lock(s) on {obj.name} in ZooKeeper "
                    f"{self.quorum} ({type(err).__name__ if err else 'error'}: {err}): "
                    + ", ".join(failed)
                )
            self._owners.forget(i.lock_id for i in infos)
            return sorted(infos, key=listing_order)

    # -- maintenance (python -m sparklock stale) ------------------------------------------------
    def empty_object_nodes(self) -> list[str]:
        """Object nodes with no children, deepest first (Hive's clean.extra.nodes finds these)."""
        with self._zk_errors("looking for empty nodes"):
            empty: list[str] = []
            level = [self.root]
            while level:
                results = self._read([(CHILDREN, p) for p in level], "looking for empty nodes")
                next_level = []
                for path, children in zip(level, results, strict=True):
                    if not isinstance(children, list):
                        continue
                    if not children and path != self.root:
                        empty.append(path)
                    next_level += [f"{path}/{c}" for c in children if parse_lock_name(c) is None]
                level = next_level
            return sorted(empty, key=lambda p: (-p.count("/"), p))

    def remove_empty_object_nodes(self, paths: Iterable[str]) -> list[str]:
        """Delete the given nodes if still empty (a node in use meanwhile is kept)."""
        removed = []
        client = self._client()
        for path in sorted(paths, key=lambda p: (-p.count("/"), p)):
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
        failed, _ = self._remove(paths, self.settings.unlock_num_retries)
        self._owners.forget(p for p in paths if p not in failed)
        return failed


def _counts_below(paths: Iterable[str]) -> dict[str, int]:
    """Per object node, how many of the lock nodes ``paths`` are at or below it."""
    counts: dict[str, int] = {}
    for p in paths:
        for obj in zkclient._object_paths(p):
            counts[obj] = counts.get(obj, 0) + 1
    return counts


def _chunks(ops: Sequence[tuple]) -> Iterator[list[tuple]]:
    """Split ``(op, tag)`` pairs into multis of at most MULTI_BYTES (in order)."""
    chunk: list[tuple] = []
    size = 0
    for item in ops:
        op = item[0]
        cost = 64 + len(op[1]) + (len(op[2]) if op[0] == "create" else 0)
        if chunk and size + cost > MULTI_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += cost
    if chunk:
        yield chunk


def _multi_failure(results: Sequence) -> BaseException | None:
    """The operation error that failed a multi (others report RolledBack/RuntimeInconsistency)."""
    errors = [r for r in results if isinstance(r, BaseException)]
    for r in errors:
        if not isinstance(r, (RolledBackError, RuntimeInconsistency)):
            return r
    return errors[0] if errors else None


__all__ = ["ZooKeeperLockManager", "object_from_components", "parse_lock_name"]
