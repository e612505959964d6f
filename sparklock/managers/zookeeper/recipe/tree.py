"""Reading the lock tree: SHOW LOCKS' walk, UNLOCK's lookup, the empty nodes of ``stale``.

Level by level, one batched read per level (children of this level and data of the lock nodes
found on the previous one), so a walk costs its depth in round trips, not its size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ....errors import InvalidObjectError
from ....locks.model import Contender, LockData, LockInfo, LockMode, LockState, listing_order, owns
from ....locks.objects import LockObject
from ....locks.waiting import with_states
from ..layout import (
    SIDE_CONTAINERS,
    deepest_first,
    object_from_components,
    object_path,
    parse_lock_name,
)
from ..wire.ops import children_of, data_of, node_data
from ..wire.owners import OwnerRegistry
from ..wire.transport import Transport


@dataclass(eq=False)
class TreeReader:
    """Walks a namespace and names what it finds as :class:`LockInfo`."""

    transport: Transport
    owners: OwnerRegistry
    root: str

    def components(self, path: str) -> tuple[str, ...]:
        return tuple(p for p in path[len(self.root) :].split("/") if p)

    def list_locks(self, obj: LockObject | None, descendants: bool) -> list[LockInfo]:
        start = object_path(self.root, obj) if obj is not None else self.root
        level = [start]
        # (object path, lock path, mode) of lock nodes whose data the next read fetches
        pending_data: list[tuple[str, str, LockMode]] = []
        infos: list[LockInfo] = []
        while level or pending_data:
            ops = [children_of(p) for p in level] + [data_of(lp) for _, lp, _ in pending_data]
            results = self.transport.read(ops, "listing locks")
            for (obj_path, lock_path, mode), got in zip(
                pending_data, results[len(level) :], strict=True
            ):
                data = node_data(got)
                if data is None:
                    continue  # released meanwhile
                info = self._info(obj_path, lock_path, mode, data)
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
                            found.append((path, f"{path}/{child}", parsed.mode))
                    elif descend and not (path == self.root and child in SIDE_CONTAINERS):
                        next_level.append(f"{path.rstrip('/')}/{child}")
            level, pending_data = next_level, found
        return sorted(self._with_states(infos), key=listing_order)

    def _with_states(self, infos: Sequence[LockInfo]) -> list[LockInfo]:
        """Each lock's state by the grant rule among its object's locks (sparklock.locks.waiting).

        The exemptions of an owner (its own explicit and enclosing locks) are known here only
        for this process's locks; a foreign lock granted through one says so in its data."""
        by_object: dict[str, list[LockInfo]] = {}
        for info in infos:
            by_object.setdefault(info.lock_id.rsplit("/", 1)[0], []).append(info)

        def seq_of(info: LockInfo) -> int:
            parsed = parse_lock_name(info.lock_id.rsplit("/", 1)[1])
            return parsed.seq if parsed is not None else -1

        def exempt(info: LockInfo, c: Contender) -> bool:
            owner = info.owner
            return owner is not None and (
                owns(owner, c.key) or self.owners.is_own_explicit(c.key, owner)
            )

        out: list[LockInfo] = []
        for locks in by_object.values():
            out += with_states(locks, seq_of, exempt)
        return out

    def _info(self, obj_path: str, lock_path: str, mode: LockMode, data: bytes) -> LockInfo | None:
        try:
            obj = object_from_components(self.components(obj_path))
        except InvalidObjectError:
            return None  # a foreign node that names no object
        return LockInfo(
            obj, mode, LockData.decode(data), lock_path, self.owners.owner_of(lock_path)
        )

    def locks_on(self, obj: LockObject, what: str) -> list[LockInfo]:
        """The locks directly on ``obj`` (two round trips: its children, then their data)."""
        path = object_path(self.root, obj)
        (children,) = self.transport.read([children_of(path)], what)
        locks = []
        if isinstance(children, list):
            for child in children:
                parsed = parse_lock_name(child)
                if parsed is not None:
                    locks.append((f"{path}/{child}", parsed.mode))
        datas = self.transport.read([data_of(p) for p, _ in locks], what)
        return [
            LockInfo(obj, mode, LockData.decode(data), p, self.owners.owner_of(p))
            for (p, mode), got in zip(locks, datas, strict=True)
            if (data := node_data(got)) is not None
        ]

    def granted_on(self, obj: LockObject, what: str) -> list[LockInfo]:
        """The granted locks directly on ``obj``: what UNLOCK removes. A request queued for
        ``obj`` holds nothing; taking its node out would send its statement to the back of the
        line."""
        states = self._with_states(self.locks_on(obj, what))
        return [i for i in states if i.state is LockState.ACQUIRED]

    def still_ours(
        self, locks: Sequence[LockInfo], what: str, limit: float | None = None
    ) -> list[str]:
        """The lock nodes of ``locks`` still carrying our data (an UNLOCK may have removed ours
        and the object node been re-created since, restarting the sequence numbers); retried
        for at most ``limit`` seconds (a release must not wait out a session timeout)."""
        ops = [data_of(i.lock_id) for i in locks]
        datas = self.transport.retrying(lambda: self.transport.read_once(ops), what, limit)
        return [
            i.lock_id
            for i, got in zip(locks, datas, strict=True)
            if (data := node_data(got)) is not None and LockData.decode(data) == i.data
        ]

    def empty_object_nodes(self) -> list[str]:
        """Object nodes with no children, deepest first."""
        empty: list[str] = []
        level = [self.root]
        while level:
            ops = [children_of(p) for p in level]
            results = self.transport.read(ops, "looking for empty nodes")
            next_level = []
            for path, children in zip(level, results, strict=True):
                if not isinstance(children, list):
                    continue
                if not children and path != self.root:
                    empty.append(path)
                next_level += [
                    f"{path}/{c}"
                    for c in children
                    if parse_lock_name(c) is None
                    and not (path == self.root and c in SIDE_CONTAINERS)
                ]
            level = next_level
        return deepest_first(empty)
