"""Steps 1 and 2 of a lock set: find which object nodes exist, then create the missing ones and
every lock node in one ``multi`` (per MULTI_BYTES), parents before children.

Step 1 is answered without a read when this process knows the answer (:class:`TreeHints`); the
multi verifies that guess atomically. A multi whose reply was lost finds its nodes again by
their unique data.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kazoo.exceptions import NodeExistsError, NoNodeError

from ...errors import LockManagerUnavailableError
from ...model import LockData, LockRequest, LockType
from .layout import LOCK_PREFIX, unique_lock_time
from .owners import OwnerRegistry
from .session import TRANSIENT_ERRORS
from .transport import (
    NotConnected,
    Transport,
    WriteOp,
    batches,
    children_of,
    create,
    data_of,
    multi_failure,
    node_data,
)

if TYPE_CHECKING:
    from .cleanup import Cleanup

log = logging.getLogger("sparklock.zookeeper")

#: How often a create is redone when a concurrent create/cleanup changed the tree under it.
MAX_TREE_RACES = 50
#: Object nodes remembered as deleted by us (so the next lock set can create them unread).
ABSENT_HINTS = 1024

#: Path components below ``/`` (the namespace root's included) of an object node.
Parts = tuple[str, ...]


@dataclass
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

    @property
    def object_path(self) -> str:
        return self.path.rsplit("/", 1)[0]


class Raced(Exception):
    """The tree changed between our read and our multi (NodeExists / NoNode): redo."""


class TreeHints:
    """What this process knows about the tree without reading it.

    Only ever a guess that a multi verifies (a wrong one costs the multi, then the read): the
    namespace root exists once a create succeeded; object nodes we deleted stay absent until
    seen again; a node with a lock of ours below it exists.
    """

    def __init__(self, root_parts: Parts, owners: OwnerRegistry) -> None:
        self.root_parts = root_parts
        self.owners = owners
        self.root_known = False
        self.absent: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def known_existing(self, needed: Iterable[Parts]) -> set[Parts] | None:
        """Which of ``needed`` exist, if this process knows for every one of them; else None."""
        existing: set[Parts] = set()
        with self._lock:
            if not self.absent and not self.root_known:
                return None
            for parts in needed:
                path = "/" + "/".join(parts)
                if parts == self.root_parts:
                    if not self.root_known:
                        return None
                    existing.add(parts)
                elif self.owners.local_count(path) > 0:
                    existing.add(parts)  # a lock of ours below it: it exists
                elif not any(
                    "/" + "/".join(parts[:depth]) in self.absent
                    for depth in range(len(self.root_parts) + 1, len(parts) + 1)
                ):
                    return None
        return existing

    def note_created(self, involved: set[Parts]) -> None:
        """A create multi succeeded: the root and every node it involved exist now."""
        with self._lock:
            self.root_known = True
            for hint in [h for h in self.absent if tuple(h[1:].split("/")) in involved]:
                del self.absent[hint]

    def note_absent(self, deleted: Iterable[str]) -> None:
        """Remember object nodes we deleted (the topmost ones: their subtrees went with them)."""
        deleted = set(deleted)
        tops = [p for p in deleted if p.rsplit("/", 1)[0] not in deleted]
        if not tops:
            return
        with self._lock:
            for p in tops:
                self.absent[p] = None
                self.absent.move_to_end(p)
            while len(self.absent) > ABSENT_HINTS:
                self.absent.popitem(last=False)

    def forget_absent(self) -> None:
        """A guess failed: read the tree next time."""
        with self._lock:
            self.absent.clear()


@dataclass
class CreatePlan:
    """The operations of step 2 for one lock set."""

    ops: list[WriteOp]
    indexes: list[int]  # per operation: the request it creates the lock of, -1 for object nodes
    fresh: set[str]  # the object nodes it creates
    involved: set[Parts]  # every object node the set needs
    guessed: bool  # step 1 answered from TreeHints, not read


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
        using: set[str] = set()  # every object node the set needs, announced to releases
        for _, request in requests:
            path = request.obj.path(self.root)
            while len(path) > len(self.root) and path not in using:
                using.add(path)
                path = path.rpartition("/")[0]
        self.owners.hold(using)
        try:
            return self._create_held(requests, data, owner)
        finally:
            self.owners.unhold(using)

    def _create_held(
        self, requests: Sequence[tuple[int, LockRequest]], data: LockData, owner: str
    ) -> list[LockNode]:
        ephemeral = data.lock_type is LockType.IMPLICIT
        guess = True
        for _ in range(MAX_TREE_RACES):
            node_data = replace(data, lock_time_ms=unique_lock_time())
            payload = node_data.encode()
            stored = LockData.decode(payload)
            plan = self.plan(requests, payload, ephemeral, guess)
            try:
                created, siblings = self._commit(plan, payload)
            except Raced:
                if plan.guessed:
                    self.hints.forget_absent()
                guess = False
                continue
            self.hints.note_created(plan.involved)
            nodes = []
            for i, (index, request) in enumerate(requests):
                node = LockNode(index, request, created[i], int(created[i][-10:]), stored, payload)
                node.fresh = node.object_path in plan.fresh
                if siblings is not None and not node.fresh:
                    node.siblings = siblings.get(node.object_path)
                nodes.append(node)
            self.owners.add((n.path for n in nodes), owner, data.lock_type)
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
    ) -> CreatePlan:
        """Step 1 (which object nodes exist) and the ordered operations of step 2.

        With ``guess``, step 1 is answered from what this process knows when it knows it for
        every node (see :class:`TreeHints`); the multi then verifies the guess (NodeExists /
        NoNode fail it atomically, and the caller redoes it with a read).
        """
        needed: set[Parts] = set()
        root_parts = self.hints.root_parts
        all_parts = [root_parts + request.obj.components for _, request in requests]
        order: Sequence[int] = range(len(all_parts))
        if any(all_parts[k] > all_parts[k + 1] for k in range(len(all_parts) - 1)):
            order = sorted(order, key=all_parts.__getitem__)  # lock sets normally come sorted
        for parts in all_parts:
            for depth in range(len(parts), 0, -1):
                prefix = parts[:depth]
                if prefix in needed:
                    break  # and so are its own prefixes
                needed.add(prefix)
        existing = self.hints.known_existing(needed) if guess else None
        guessed = existing is not None
        if existing is None:
            containers = sorted({parts[:-1] for parts in needed})
            listing = self.transport.read(
                [children_of("/" + "/".join(c)) for c in containers], "reading the lock tree"
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
        plan = CreatePlan([], [], set(), needed, guessed)
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
                plan.fresh.add(path)
                plan.ops.append(create(path))
                plan.indexes.append(-1)
            path = "/" + "/".join(parts) + f"/{LOCK_PREFIX}{request.mode.value}-"
            plan.ops.append(create(path, payload, ephemeral=ephemeral, sequence=True))
            plan.indexes.append(i)
        return plan

    def _commit(
        self, plan: CreatePlan, payload: bytes
    ) -> tuple[dict[int, str], dict[str, list[str]] | None]:
        """Commit the creates (one multi per MULTI_BYTES); request index -> created lock path,
        and, for a set of one multi, the children of the object nodes it did not create (what
        the grant check reads), read right behind the multi."""
        created: dict[int, str] = {}
        parts = list(batches(plan.ops))
        along: list[str] = []
        if len(parts) == 1:  # the grant check's objects: locks whose object node existed
            along = list(
                dict.fromkeys(
                    op.path.rpartition("/")[0]
                    for op, index in zip(plan.ops, plan.indexes, strict=True)
                    if index >= 0 and op.path.rpartition("/")[0] not in plan.fresh
                )
            )
        siblings: dict[str, list[str]] | None = None
        try:
            for part in parts:
                ops, indexes = plan.ops[part], plan.indexes[part]
                try:
                    results, listing = self.transport.commit_then_read(
                        ops, [children_of(p) for p in along], "creating lock nodes"
                    )
                except NotConnected as exc:
                    raise self.transport.unavailable("creating lock nodes", exc) from exc
                except TRANSIENT_ERRORS as exc:
                    found = self._find_uncertain(ops, indexes, payload, exc)
                    if found is None:
                        raise Raced() from exc
                    created.update(found)
                    continue
                failure = multi_failure(results)
                if failure is not None:
                    if isinstance(failure, (NodeExistsError, NoNodeError)):
                        raise Raced()
                    raise failure
                for index, result in zip(indexes, results, strict=True):
                    if index >= 0:
                        created[index] = result
                if listing is not None:
                    pairs = zip(along, listing, strict=True)
                    siblings = {p: got for p, got in pairs if isinstance(got, list)}
        except BaseException:
            self.cleanup.drop_paths(created.values(), payload)  # earlier batches of this set
            raise
        return created, siblings

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
