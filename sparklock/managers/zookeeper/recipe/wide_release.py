"""Releasing a lock set too big for one ``multi`` (a full read of 10,000 partitions).

Why a path of its own: such a set cannot be deleted atomically with its empty object nodes, and
the step-by-step path made for races (delete the locks, then try to delete every parent object
node, eliminating the busy ones one failed multi at a time, then one request per node) cost a
request per object node whenever the nodes stayed in use — by another reader of the same table,
in this process or elsewhere: over a second for 10,000 partitions. Here the cost stays a handful
of requests whatever happens: the lock nodes in a few multis; then the object nodes this process
knows to be kept (its other locks are below them) are left alone without a request, the ones the
acquisition created itself are deleted without reading, and the others are read in one batched
read and only the empty ones deleted, in a few multis. A multi that fails because the tree changed
meanwhile is redone node by node for that batch alone.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import Delete

from ....errors import SparkLockError
from ..layout import deepest_first
from ..wire.ops import children_of, multi_failure, weighed_batches

if TYPE_CHECKING:
    from ..wire.owners import OwnerRegistry
    from ..wire.transport import Transport
    from .tree_hints import TreeHints

log = logging.getLogger("sparklock.zookeeper")


@dataclass(eq=False)
class WideRelease:
    """Removing the object nodes of a wide set (the base of the manager's ``Cleanup``)."""

    transport: Transport
    owners: OwnerRegistry
    hints: TreeHints  # told which object nodes were deleted
    root: str
    release_wait: float  # how long a release waits for a connection

    def remove_objects(
        self,
        objects: Sequence[str],
        fresh: Collection[str] | None,
        mine: dict[str, int],
        kept: list[str] | None,
    ) -> None:
        """Once the lock nodes are gone: delete the object nodes ``objects`` left empty.
        ``mine``: our lock nodes deleted at or below each object node; ``kept`` receives the
        object nodes left for other locks or acquisitions of this process."""
        busy = self.owners.used_beyond(objects, mine)
        if kept is not None:
            kept.extend(busy)
        skip = set(busy)
        top = len(self.root)  # (never the namespace root)
        rest = deepest_first(o for o in objects if o not in skip and o[top:].strip("/"))
        try:
            if fresh is not None and _all_in(rest, fresh):
                empty = rest  # created by the acquisition, nothing of ours below: a multi verifies
            else:
                empty = empty_now(self, rest)
            self.hints.note_absent(delete_objects(self, empty))
        except (KazooException, KazooTimeoutError, SparkLockError) as exc:
            # the locks are released; empty object nodes are best effort (Hive leaves them too)
            log.debug("sparklock: cleaning up empty lock nodes failed: %r", exc)


def _all_in(paths: Sequence[str], fresh: Collection[str]) -> bool:
    return (fresh if isinstance(fresh, (set, frozenset)) else set(fresh)).issuperset(paths)


def empty_now(cleanup: WideRelease, objects: Sequence[str]) -> list[str]:
    """Of ``objects`` (deepest first), those left without children once the empty ones below
    them are deleted too: one batched read."""
    if not objects:
        return []
    listing = cleanup.transport.read([children_of(o) for o in objects], "releasing locks")
    deleting: set[str] = set()
    out = []
    for obj, children in zip(objects, listing, strict=True):
        if isinstance(children, list) and all(f"{obj}/{c}" in deleting for c in children):
            deleting.add(obj)
            out.append(obj)
    return out


def delete_objects(cleanup: WideRelease, objects: Sequence[str]) -> list[str]:
    """Delete object nodes (deepest first) in as few multis as fit; a batch the tree changed
    under is redone node by node (best effort, like Hive's). Returns what the multis deleted."""
    ops = [Delete(o, -1) for o in objects]
    deleted: list[str] = []
    transport = cleanup.transport
    parts = list(weighed_batches(ops))
    if not parts:
        return deleted
    batches = [(ops[part], size) for part, size in parts]
    wait = cleanup.release_wait
    outcomes, _ = transport.commit_batches(batches, "cleaning up", connect_wait=wait)
    for (part, _), outcome in zip(parts, outcomes, strict=True):
        batch = list(objects[part])
        if isinstance(outcome, list) and multi_failure(outcome) is None:
            deleted.extend(batch)
            continue
        if isinstance(outcome, BaseException):
            continue  # not sent or outcome unknown: best effort, as for any empty object node
        client = transport.client()
        pending = [client.delete_async(p) for p in batch]  # in order: children first
        for async_result in pending:
            with contextlib.suppress(KazooException):
                async_result.get(timeout=transport.op_timeout)
    return deleted
