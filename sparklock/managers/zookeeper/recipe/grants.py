"""The steps both wait policies take for a lock set: create its nodes (steps 1 and 2), check
them by the grant rule (step 3), name who is in the way, drop what an attempt will not hold.

The manager runs them for the ``retry`` policy, :mod:`.queued` for the ``queue`` policy: this is
the whole of what the fair wait needs from the manager besides registering a granted set.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from kazoo.exceptions import NoNodeError

from ....locks.model import (
    Contender,
    GrantDecision,
    LockData,
    LockInfo,
    LockMode,
    LockRequest,
    compatible,
    decide,
    owns,
)
from ....locks.objects import LockObject
from ..layout import LOCK_PREFIX, parse_lock_name
from ..wire.ops import children_of, data_of, node_data
from ..wire.owners import OwnerRegistry
from ..wire.transport import Transport
from .cleanup import Cleanup
from .creation import LockNode, NodeCreator

#: The name prefix of EXCLUSIVE lock nodes (what a SHARED request can conflict with).
EXCLUSIVE_PREFIX = f"{LOCK_PREFIX}{LockMode.EXCLUSIVE.value}-"

#: How often an acquisition starts over after its session was lost or its node was removed.
MAX_RESTARTS = 5


class Restart(Exception):
    """Our locks were taken away (session lost, UNLOCK by someone): start the set over."""


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


@dataclass(eq=False)
class GrantSteps:
    """One manager's steps on lock nodes (its transport, owners, creator and cleanup)."""

    transport: Transport
    owners: OwnerRegistry
    creator: NodeCreator
    cleanup: Cleanup

    # -- steps 1, 2 and 4: create and drop lock nodes ------------------------------------------
    def create(
        self, requests: Sequence[tuple[int, LockRequest]], data: LockData, owner: str
    ) -> list[LockNode]:
        return self.creator.create(requests, data, owner)

    def drop(self, nodes: Iterable[LockNode]) -> None:
        """Delete the nodes of an attempt that is not going to hold them."""
        nodes = list(nodes)
        if nodes:
            fresh = {n.object_path for n in nodes if n.fresh}
            by_payload: dict[bytes, list[str]] = {}  # one, unless a node was marked acquired
            for n in nodes:
                by_payload.setdefault(n.payload, []).append(n.path)
            for payload, paths in by_payload.items():
                self.cleanup.drop_paths(paths, payload, fresh)

    # -- step 3: the grant check --------------------------------------------------------------
    def decide(self, node: LockNode, children: Sequence[str], owner: str) -> GrantDecision:
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
            lambda c: owns(owner, c.key) or self.owners.is_own_explicit(c.key, owner),
        )
        if decision.granted and any(
            c.seq < node.seq and not compatible(c.mode, node.request.mode) for c in contenders
        ):
            # Granted past a conflicting lock of its own owner: a reader elsewhere cannot know
            # that exemption, so the node says it is granted (sparklock.locks.waiting).
            self.mark_acquired(node)
        return decision

    def mark_acquired(self, node: LockNode) -> None:
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

    def check(self, nodes: Sequence[LockNode], owner: str) -> tuple[LockNode, GrantDecision] | None:
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
            decision = self.decide(node, children, owner)
            if not decision.granted:
                return node, decision
        return None

    def holders(self, obj: LockObject, blockers: Sequence[Contender]) -> list[LockInfo]:
        """Name the locks in the way (only ever read on a conflict)."""
        ordered = sorted(blockers, key=lambda c: c.seq)
        datas = self.transport.read([data_of(c.key) for c in ordered], "reading lock holders")
        return [
            LockInfo(obj, c.mode, LockData.decode(data), c.key, self.owners.owner_of(c.key))
            for c, got in zip(ordered, datas, strict=True)
            if (data := node_data(got)) is not None
        ]
