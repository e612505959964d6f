"""Step 4 of a lock set: delete its lock nodes and the object nodes they leave empty (Hive
deletes those too), in one ``multi`` when possible, step by step when the tree changed under us;
and the nodes a failed cleanup left behind (orphans), retried later.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kazoo.exceptions import KazooException, NoNodeError, NotEmptyError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import Delete

from .... import telemetry
from ....errors import LockManagerUnavailableError, SparkLockError
from ..layout import counts_below, deepest_first
from ..wire.ops import (
    MULTI_BYTES,
    children_of,
    data_of,
    delete,
    multi_failure,
    node_data,
    weighed_batches,
)
from ..wire.session import TRANSIENT_ERRORS
from ..wire.transport import NotConnected
from .wide_release import WideRelease

if TYPE_CHECKING:
    pass

log = logging.getLogger("sparklock.zookeeper")

#: Cleanup multis tried before falling back to one delete per object node.
CLEANUP_MULTIS = 3

#: What a removal could not delete, and the last error.
Failed = tuple[list[str], BaseException | None]


def _weight(paths: Sequence[str]) -> int:
    """What deleting ``paths`` weighs in a multi (``op_bytes`` of their deletes, summed)."""
    return 64 * len(paths) + sum(map(len, paths))


@dataclass(eq=False)
class Cleanup(WideRelease):
    """Removes lock nodes and the object nodes left empty; keeps the orphans to retry."""

    unlock_tries: int = 10
    #: our nodes a failed cleanup left (path -> data written), retried later
    orphans: dict[str, bytes] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _is_object(self, path: str) -> bool:
        """An object node (below the namespace root; never the root itself)."""
        return bool(path[len(self.root) :].strip("/"))

    def remove(
        self,
        paths: Sequence[str],
        tries: int,
        fresh: Collection[str] | None = None,
        kept: list[str] | None = None,
        mine: dict[str, int] | None = None,
    ) -> Failed:
        """Delete lock nodes and the object nodes they leave empty.

        Fastest path, for lock sets whose object nodes were all created by their own acquisition
        (``fresh``) or still hold other locks of this process: ONE multi deleting the lock nodes
        and the fresh object nodes no other lock of ours is below, without reading (if someone
        else has a node below one of them meanwhile, the multi fails and the next path runs).
        Fast path: read the object nodes' children (one batched read), then ONE multi deleting
        the lock nodes and, deepest first, every object node that only holds what we delete.
        If anything changed in between (the multi fails), fall back to deleting the lock nodes
        alone (retried up to ``tries`` times) and cleaning up separately. Returns what could not
        be deleted and the last error; ``kept`` receives the object nodes left in place because
        another lock or acquisition of this process uses them (see ``forget``). ``mine``: the
        ``counts_below`` of ``paths`` when the caller has it.
        """
        given = len(paths)
        paths = list(dict.fromkeys(paths))
        if not paths:
            return [], None
        objects = list(dict.fromkeys([p.rpartition("/")[0] for p in paths]))
        shared = self.transport.shared
        if mine is None or len(paths) != given:  # (counted with the duplicates)
            mine = counts_below(paths)
        weight = _weight(paths)  # what deleting the lock nodes weighs in a multi (op_bytes)
        if shared.connected and weight + _weight(objects) > MULTI_BYTES:
            failed, err = self._delete_locks(paths, tries)
            if failed:
                gone = set(paths) - set(failed)
                self.cleanup_objects(dict.fromkeys(p.rsplit("/", 1)[0] for p in paths if p in gone))
                return failed, err
            wide = WideRelease(
                self.transport, self.owners, self.hints, self.root, self.release_wait
            )
            wide.remove_objects(objects, fresh, mine, kept)
            return [], None
        ops = [Delete(p, -1) for p in paths]
        if shared.connected:
            # (an empty ``fresh`` too: every object node may be kept by our other locks)
            predicted = self._predict_empty(objects, fresh, mine) if fresh is not None else None
            if predicted is not None and self._delete_all(
                ops, weight, predicted, objects, mine, kept
            ):
                return [], None
            try:
                # a release must not wait out a whole session timeout for the connection (the
                # read would queue in kazoo): fail fast into the bounded, step-by-step deletes
                if not shared.wait_connected(self.release_wait):
                    raise NotConnected(f"not connected to ZooKeeper {self.transport.quorum}")
                listing = self.transport.read([children_of(o) for o in objects], "releasing locks")
                empty = self._empty_after(paths, objects, listing)
                if self._delete_all(ops, weight, empty, objects, mine, kept):
                    return [], None
            except (*TRANSIENT_ERRORS, KazooException, LockManagerUnavailableError) as exc:
                log.debug("sparklock: one-multi release failed (%r); deleting step by step", exc)
        failed, err = self._delete_locks(paths, tries)
        gone = set(paths) - set(failed)
        self.cleanup_objects(dict.fromkeys(p.rsplit("/", 1)[0] for p in paths if p in gone))
        return failed, err

    def _delete_all(
        self,
        ops: list,
        weight: int,
        empty: Sequence[str],
        objects: Sequence[str],
        mine: dict[str, int],
        kept: list[str] | None,
    ) -> bool:
        """ONE multi deleting the lock nodes (``ops``, weighing ``weight``) and the object nodes
        ``empty``; whether it went through."""
        try:
            left = self._kept(objects, empty, mine)
            results = self.transport.commit(
                ops + [Delete(o, -1) for o in empty],
                "releasing locks",
                size=weight + _weight(empty),
            )
        except (*TRANSIENT_ERRORS, KazooException, LockManagerUnavailableError) as exc:
            log.debug("sparklock: one-multi release failed (%r)", exc)
            return False
        if multi_failure(results) is not None:
            return False
        self.hints.note_absent(empty)
        if kept is not None:
            kept.extend(left)
        return True

    def _kept(
        self, objects: Sequence[str], deleted: Sequence[str], mine: dict[str, int]
    ) -> list[str]:
        """The object nodes left in place (as decided now) while this process still uses them."""
        gone = set(deleted)
        return self.owners.used_beyond([obj for obj in objects if obj not in gone], mine)

    def forget(
        self, paths: Iterable[str], kept: Sequence[str] = (), mine: dict[str, int] | None = None
    ) -> None:
        """Forget our deleted lock nodes; clean up the object nodes ``remove`` kept for other
        locks of this process that have all gone meanwhile.

        Two threads releasing under one node at once each see the other's lock and keep the
        node; the one whose forget leaves the node unused by this process (counted atomically)
        deletes it if it is empty now, as Hive's unlock deletes a node found empty after its
        own delete. No request unless that happens. ``mine``: the ``counts_below`` of
        ``paths`` when the caller has it.
        """
        unused = self.owners.forget(paths, mine)
        left = [obj for obj in kept if obj in unused]
        if left:
            self.cleanup_objects(left)

    def _predict_empty(
        self, objects: Sequence[str], fresh: Collection[str], mine: dict[str, int]
    ) -> list[str] | None:
        """The object nodes (deepest first) to delete with ``paths`` without reading, or None
        when one of them is neither fresh nor kept by another lock of this process. ``mine``:
        how many of the lock nodes being deleted are at or below each object node."""
        # kept: another lock or acquisition of this process is at or below it
        kept = set(self.owners.used_beyond(objects, mine))
        top = len(self.root)
        out = []
        for obj in deepest_first(objects):
            if obj in kept or not obj[top:].strip("/"):  # (never the namespace root)
                continue
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
        children_of_object = dict(zip(objects, listing, strict=True))
        deleting: set[str] = set()
        out = []
        for obj in deepest_first(objects):
            children = children_of_object.get(obj)
            if not isinstance(children, list) or not self._is_object(obj):
                continue
            if self.owners.held_count(obj):
                continue  # another thread of this process is about to lock below it
            mine = ours.get(obj, set())
            if all(c in mine or f"{obj}/{c}" in deleting for c in children):
                deleting.add(obj)
                out.append(obj)
        return out

    def _delete_locks(self, paths: Sequence[str], tries: int) -> Failed:
        """Delete lock nodes (one multi per batch; already-gone ones count as deleted).

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
                ops = [Delete(p, -1) for p in remaining]
                parts = list(weighed_batches(ops))
                outcomes, _ = self.transport.commit_batches(
                    [(ops[part], size) for part, size in parts],
                    "releasing locks",
                    connect_wait=self.release_wait,
                )
                for (part, _), outcome in zip(parts, outcomes, strict=True):
                    batch = remaining[part]
                    if isinstance(outcome, BaseException):  # unknown or not sent: try again
                        last = outcome
                        left.extend(batch)
                        continue
                    failure = multi_failure(outcome)
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
                telemetry.emit(telemetry.RELEASE_RETRIED)
                self.transport.shared.wait_connected(delay)
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        return remaining, last

    def _delete_each(self, paths: Sequence[str]) -> list[str]:
        """Pipelined single deletes; NoNode is success. Returns the failed paths."""
        client = self.transport.client()
        pending = [(p, client.delete_async(p)) for p in paths]
        failed = []
        for path, async_result in pending:
            try:
                async_result.get(timeout=self.transport.op_timeout)
            except NoNodeError:
                pass
            except TRANSIENT_ERRORS:
                raise
            except KazooException:
                failed.append(path)
        return failed

    def cleanup_objects(self, object_paths: Iterable[str]) -> None:
        """Delete the object nodes that are now empty, deepest first (best effort, like Hive)."""
        candidates = deepest_first({p for p in object_paths if self._is_object(p)})
        if not self.transport.shared.connected:
            return  # best effort: the next release of these objects tries again
        try:
            for _ in range(CLEANUP_MULTIS):
                if not candidates:
                    return
                results = self.transport.commit(
                    [delete(p) for p in candidates], "cleaning up", self.release_wait
                )
                failure = multi_failure(results)
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
            client = self.transport.client()
            pending = [client.delete_async(p) for p in candidates]
            for async_result in pending:
                with contextlib.suppress(KazooException):
                    async_result.get(timeout=self.transport.op_timeout)
        except (KazooException, SparkLockError) as exc:
            log.debug("sparklock: cleaning up empty lock nodes failed: %r", exc)

    def drop_paths(
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
        failed, err = self.remove(paths, max(1, self.unlock_tries), fresh, kept)
        self.forget((p for p in paths if p not in failed), kept)
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
                    self.orphans[p] = payload or b""

    def sweep_orphans(self) -> None:
        """Retry deleting nodes a failed cleanup left behind (only if still carrying our data)."""
        with self._lock:
            if not self.orphans:
                return
            orphans = dict(self.orphans)
            self.orphans.clear()
        try:
            paths = list(orphans)
            datas = self.transport.read([data_of(p) for p in paths], "removing leftover lock nodes")
            ours = [
                p
                for p, got in zip(paths, datas, strict=True)
                if (data := node_data(got)) is not None and (not orphans[p] or data == orphans[p])
            ]
            failed, _ = self.remove(ours, 1)
        except (SparkLockError, KazooException, KazooTimeoutError):
            failed = list(orphans)
        self.owners.forget(p for p in orphans if p not in failed)
        with self._lock:
            for p in failed:
                self.orphans.setdefault(p, orphans[p])
