"""What the ZooKeeper manager keeps beside the lock tree, never in it: the WAITING markers of
``retry`` requests (:mod:`.recipe.waiters`), the published waits of the deadlock detection
(:mod:`.recipe.wait_graph`), the presence of the agents that hold locks
(:mod:`.recipe.presence`) and the watches on running writers' locks (:mod:`.removals`). The
manager's hooks for them, in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ...locks.model import LockInfo
from ..base import HeldLocks, Refusal
from .live_sets import LiveSets
from .recipe.presence import Presence
from .recipe.wait_graph import WaitGraph
from .recipe.waiters import Shown, WaitMarkers
from .removals import RemovalListener, RemovalWatch
from .wire.transport import Transport


class SideNodes:
    """Mixed into the manager: it sets ``transport``, ``_markers``, ``_graph``, ``_presence``,
    ``_removals``."""

    transport: Transport
    _markers: WaitMarkers
    _graph: WaitGraph
    _presence: Presence
    _removals: RemovalWatch

    def _side_nodes(self, transport: Transport, root: str, live: LiveSets) -> None:
        self._markers = WaitMarkers(transport, root)
        self._graph = WaitGraph(transport, root)
        self._presence = Presence(transport, root)
        self._removals = RemovalWatch(transport, live)

    # -- a running writer's lock removed by another client ---------------------------------------
    def watch_removals(self, listener: RemovalListener) -> None:
        self._removals.add_listener(listener)

    def _watch_nodes(self, held: HeldLocks, created_at: Mapping[str, int]) -> None:
        self._removals.watch(held, created_at)

    def _owned(
        self, held: HeldLocks, read: Callable[[Sequence[LockInfo]], list[str]] | None
    ) -> list[str]:
        """The lock ids of ``held`` still its own, in order, at its release: what its watches
        vouch for, the rest read back by ``read`` (None: cannot read, so every one is taken
        for ours and a delete that fails says otherwise). Stops tracking ``held``."""
        try:
            if read is None:
                return [i.lock_id for i in held.locks]
            known, unknown = self._removals.ours(held)
            mine = set(known) | set(read(unknown) if unknown else ())
            return [i.lock_id for i in held.locks if i.lock_id in mine]
        finally:
            self._removals.forget(held)

    def _unwatch(self, held: HeldLocks) -> None:
        self._removals.forget(held)

    def _removing(self, paths: Sequence[str]) -> None:
        self._removals.expect(paths)

    # -- WAITING rows of retry requests --------------------------------------------------------
    def _show_waiting(self, shown: object | None, row: LockInfo) -> object | None:
        return self._markers.show(shown if isinstance(shown, Shown) else None, row)

    def _hide_waiting(self, shown: object) -> None:
        if isinstance(shown, Shown):
            self._markers.hide(shown)

    # -- deadlocks across drivers (the queue policy's wait looks by itself) ----------------------
    def _check_deadlock(self, owner: str, query_id: str, refusal: Refusal, since_ms: int) -> None:
        self._graph.look(owner, query_id, refusal, since_ms)

    def _end_wait(self, owner: str, query_id: str) -> None:
        self._graph.withdraw(owner, query_id)

    # -- owners' lives ----------------------------------------------------------------------------
    def _register_agent(self, agent: str) -> bool:
        return self._presence.register(agent)

    def owners_alive(self, infos: Sequence[LockInfo]) -> list[bool | None]:
        with self.transport.errors("checking owners"):
            return self._presence.alive(infos)
