"""Steps 1 and 2 of a lock set: find which object nodes exist, then create the missing ones and
every lock node in one ``multi`` (per MULTI_BYTES), parents before children.

Step 1 is answered without a read when this process knows the answer (:class:`TreeHints`); the
multi verifies that guess atomically. A multi whose reply was lost finds its nodes again by
their unique data.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.serialization import Create

from ....errors import LockManagerUnavailableError
from ....locks.model import LockData, LockMode, LockRequest, LockType
from ..layout import LOCK_PREFIX, unique_lock_time
from ..wire.clock import zxid_of
from ..wire.ops import (
    EPHEMERAL,
    MULTI_BYTES,
    OPEN_ACL,
    SEQUENCE,
    ReadOp,
    WriteOp,
    children_of,
    data_of,
    multi_failure,
    node_data,
    weighed_batches,
)
from ..wire.owners import OwnerRegistry
from ..wire.session import TRANSIENT_ERRORS
from ..wire.transport import NotConnected, Transport
from .tree_hints import Parts, TreeHints, needed_nodes

if TYPE_CHECKING:
    from .cleanup import Cleanup

log = logging.getLogger("sparklock.zookeeper")

#: How often a create is redone when a concurrent create/cleanup changed the tree under it.
MAX_TREE_RACES = 50


def _components(path: str) -> Parts:
    return tuple(p for p in path.split("/") if p)


@dataclass(slots=True)  # thousands per wide set: no __dict__ each (less for the GC to track)
class LockNode:
    """One lock node of ours."""

    index: int  # position in the lock set
    request: LockRequest
    path: str  # the created znode (sequence suffix included)
    seq: int
    data: LockData  # as stored (decoded back from the bytes written)
    payload: bytes  # the bytes written
    fresh: bool = False  # its object node was created by the same multi
    #: its object node's children, read right behind the create (the grant check's read, one
    #: round trip sooner); None when not read along
    siblings: list[str] | None = None
    #: the lock's object node (``path`` without its last component; given by the creator,
    #: which has it at hand, else derived)
    object_path: str = ""
    #: the zxid the node was created at (0: not known, its multi's outcome was found by reading)
    zxid: int = 0

    def __post_init__(self) -> None:
        if not self.object_path:
            self.object_path = self.path.rsplit("/", 1)[0]


class Raced(Exception):
    """The tree changed between our read and our multi (NodeExists / NoNode): redo."""


@dataclass
class CreatePlan:
    """The operations of step 2 for one lock set."""

    ops: list[WriteOp]
    indexes: list[int]  # per operation: the request it creates the lock of, -1 for object nodes
    fresh: set[str]  # the object nodes it creates
    involved: set[str]  # every object node the set needs
    guessed: bool  # step 1 answered from TreeHints, not read
    #: the object nodes of its locks that existed before it, in order (the grant check's reads)
    along: list[str] = field(default_factory=list)
    size: int = 0  # what ``ops`` weigh in a multi (``op_bytes`` summed)


@dataclass(eq=False)
class NodeCreator:
    """Creates the lock nodes of a set (and their missing object nodes) in one multi."""

    transport: Transport
    owners: OwnerRegistry
    hints: TreeHints
    cleanup: Cleanup  # takes back what a failed create left
    root: str

    def create(
        self, requests: Sequence[tuple[int, LockRequest]], data: LockData, owner: str
    ) -> list[LockNode]:
        """One lock node per ``(index, request)``, announcing its object nodes to releases."""
        # each request's object node path, computed once for the whole create
        prefix = self.hints.prefix
        objects = [prefix + "/".join(request.obj.components) for _, request in requests]
        needed = needed_nodes(objects)
        top = len(self.hints.root_path)
        using = [p for p in needed if len(p) > top]  # announced to releases (not the root)
        self.owners.hold(using)
        try:
            return self._create_held(requests, objects, needed, data, owner)
        finally:
            self.owners.unhold(using)

    def _create_held(
        self,
        requests: Sequence[tuple[int, LockRequest]],
        objects: Sequence[str],
        needed: set[str],
        data: LockData,
        owner: str,
    ) -> list[LockNode]:
        ephemeral = data.lock_type is LockType.IMPLICIT
        guess = True
        for _ in range(MAX_TREE_RACES):
            node_data = replace(data, lock_time_ms=unique_lock_time())
            payload = node_data.encode()
            stored = LockData.decode(payload)
            plan = self.plan(requests, payload, ephemeral, guess, objects, needed)
            try:
                created, siblings, zxids = self._commit(plan, payload)
            except Raced:
                if plan.guessed:
                    self.hints.forget_absent()
                guess = False
                continue
            self.hints.note_created(plan.involved)
            fresh = plan.fresh
            nodes = []
            for i, (index, request) in enumerate(requests):
                path, obj = created[i], objects[i]
                node = LockNode(
                    index,
                    request,
                    path,
                    int(path[-10:]),
                    stored,
                    payload,
                    object_path=obj,
                    zxid=zxids.get(i, 0),
                )
                if obj in fresh:
                    node.fresh = True
                else:
                    node.siblings = siblings.get(obj)
                nodes.append(node)
            self.owners.add(created.values(), owner, data.lock_type)
            return nodes
        raise LockManagerUnavailableError(
            f"ZooKeeper {self.transport.quorum}: the lock tree kept changing under "
            f"{MAX_TREE_RACES} attempts to create lock nodes"
        )

    def plan(
        self,
        requests: Sequence[tuple[int, LockRequest]],
        payload: bytes,
        ephemeral: bool,
        guess: bool = True,
        objects: Sequence[str] | None = None,
        needed: set[str] | None = None,
    ) -> CreatePlan:
        """Step 1 (which object nodes exist) and the ordered operations of step 2.

        With ``guess``, step 1 is answered from what this process knows when it knows it for
        every node (see :class:`TreeHints`); the multi then verifies the guess (NodeExists /
        NoNode fail it atomically, and the caller redoes it with a read). ``objects`` (each
        request's object node path) and ``needed`` (``needed_nodes`` of them) are computed
        here unless the caller has them.
        """
        if objects is None:
            prefix = self.hints.prefix
            objects = [prefix + "/".join(request.obj.components) for _, request in requests]
        if needed is None:
            needed = needed_nodes(objects)
        existing = self.hints.known_existing(needed) if guess else None
        guessed = existing is not None
        if existing is None:
            existing = self._read_existing(needed)
        order: Sequence[int] = range(len(requests))
        comps = [request.obj.components for _, request in requests]
        if any(comps[k] > comps[k + 1] for k in range(len(comps) - 1)):
            order = sorted(order, key=comps.__getitem__)  # lock sets normally come sorted
        # In lock-set order (parents sort before children): each request's missing object
        # nodes, parents first, then its lock. So an object's lock comes before its child
        # object nodes, and a fresh object's lock is its first child (sequence 0: nothing to
        # check).
        plan = CreatePlan([], [], set(), needed, guessed)
        ops, indexes, fresh = plan.ops, plan.indexes, plan.fresh
        op, index, present = ops.append, indexes.append, set(existing)
        along: dict[str, None] = {}
        flags = (EPHEMERAL if ephemeral else 0) | SEQUENCE
        names = {mode: f"/{LOCK_PREFIX}{mode.value}-" for mode in LockMode}
        for i in order:
            obj = objects[i]
            if obj in present:
                if obj not in fresh:
                    along[obj] = None
            elif obj.rpartition("/")[0] in present:  # the usual: a partition of a known table
                present.add(obj)
                fresh.add(obj)
                op(Create(obj, b"", OPEN_ACL, 0))
                index(-1)
            else:
                missing = []
                path = obj
                while path and path not in present:
                    missing.append(path)
                    path = path.rpartition("/")[0]
                for path in reversed(missing):
                    present.add(path)
                    fresh.add(path)
                    op(Create(path, b"", OPEN_ACL, 0))
                    index(-1)
            op(Create(obj + names[requests[i][1].mode], payload, OPEN_ACL, flags))
            index(i)
        plan.along = list(along)
        # op_bytes summed: 64 and the path per operation, the payload per lock
        locks = len(requests)
        plan.size = 64 * len(ops) + sum(len(o.path) for o in ops) + len(payload) * locks
        return plan

    def _read_existing(self, needed: set[str]) -> set[str]:
        """Step 1 by reading: the children of every container of ``needed`` (one batched read)."""
        # containers in the order of their components (as the tree is walked)
        containers = sorted({p.rpartition("/")[0] or "/" for p in needed}, key=_components)
        listing = self.transport.read([children_of(c) for c in containers], "reading the lock tree")
        existing: set[str] = set()
        for container, children in zip(containers, listing, strict=True):
            if isinstance(children, list):
                base = container.rstrip("/") + "/"
                existing.update(base + child for child in children)
            elif not isinstance(children, NoNodeError):
                raise children
        return existing

    def _commit(
        self, plan: CreatePlan, payload: bytes
    ) -> tuple[dict[int, str], dict[str, list[str]], dict[int, int]]:
        """Commit the creates (one multi per MULTI_BYTES, all sent before any answer is read);
        request index -> created lock path, the children of the object nodes it did not
        create (what the grant check reads), each read right behind the multi that creates its
        lock (one whose read failed or was not sent along is missing: the check reads it), and
        request index -> the zxid its node was created at (where its multi's answer said)."""
        one = plan.size <= MULTI_BYTES  # what ``weighed_batches`` would say, without weighing
        parts: list[tuple[slice, int]] = (
            [(slice(0, len(plan.ops)), plan.size)] if one else list(weighed_batches(plan.ops))
        )
        # the grant check's reads (objects whose node existed), each behind the batch that
        # creates its lock
        along = set(plan.along)
        reads: list[list[ReadOp]] = []
        for part, _ in parts if along else ():
            ops = zip(plan.ops[part], plan.indexes[part], strict=True)
            mine = [op.path.rpartition("/")[0] for op, index in ops if index >= 0]
            reads.append([children_of(o) for o in dict.fromkeys(mine) if o in along])
        try:
            outcomes, listings = self.transport.commit_batches(
                [(plan.ops[part], size) for part, size in parts], "creating lock nodes", reads
            )
        except NotConnected as exc:
            raise self.transport.unavailable("creating lock nodes", exc) from exc
        created: dict[int, str] = {}
        zxids: dict[int, int] = {}
        raced = False
        error: BaseException | None = None
        try:
            for (part, _), outcome in zip(parts, outcomes, strict=True):
                ops, indexes = plan.ops[part], plan.indexes[part]
                if isinstance(outcome, NotConnected):  # never sent
                    error = error or self.transport.unavailable("creating lock nodes", outcome)
                elif isinstance(outcome, TRANSIENT_ERRORS):  # sent, outcome unknown
                    found = self._find_uncertain(ops, indexes, payload, outcome)
                    if found is None:
                        raced = True
                    else:
                        created.update(found)
                elif isinstance(outcome, BaseException):
                    error = error or outcome
                elif (failure := multi_failure(outcome)) is not None:
                    if isinstance(failure, (NodeExistsError, NoNodeError)):
                        raced = True  # (later batches may fail for it too: NoNode)
                    else:
                        error = error or failure
                else:
                    zxid = zxid_of(outcome)
                    for index, result in zip(indexes, outcome, strict=True):
                        if index >= 0:
                            created[index] = result
                            if zxid:
                                zxids[index] = zxid
            if error is not None:
                raise error
            if raced:
                raise Raced()
        except BaseException:
            self.cleanup.drop_paths(created.values(), payload)  # the batches that went through
            raise
        siblings: dict[str, list[str]] = {}  # (one a read failed for is read again)
        for read, listing in zip(reads, listings, strict=False):  # (no reads: none)
            if read and listing is not None:
                pairs = zip(read, listing, strict=True)
                siblings.update((op.path, got) for op, got in pairs if isinstance(got, list))
        return created, siblings, zxids

    def _find_uncertain(
        self, ops: Sequence[WriteOp], indexes: Sequence[int], payload: bytes, exc: BaseException
    ) -> dict[int, str] | None:
        """A create multi whose outcome is unknown: find its lock nodes by their unique data."""
        log.warning("sparklock: creating lock nodes failed (%r); checking what was created", exc)
        locks = [(op.path, index) for op, index in zip(ops, indexes, strict=True) if index >= 0]
        parents = [path.rsplit("/", 1)[0] for path, _ in locks]
        read = self.transport.read
        listing = read([children_of(p) for p in parents], "recovering a lock create")
        candidates: list[tuple[int, str]] = []
        for (path, index), parent, children in zip(locks, parents, listing, strict=True):
            if not isinstance(children, list):
                continue
            prefix = path.rsplit("/", 1)[1]
            candidates.extend((index, f"{parent}/{c}") for c in children if c.startswith(prefix))
        datas = read([data_of(p) for _, p in candidates], "recovering a lock create")
        found = {
            index: path
            for (index, path), got in zip(candidates, datas, strict=True)
            if node_data(got) == payload
        }
        if len(found) == len(locks):
            return found
        if found:  # part of an atomic multi survived: ephemeral ones died with a session
            self.cleanup.drop_paths(found.values(), payload)
        return None
