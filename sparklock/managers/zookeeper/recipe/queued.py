"""The ``queue`` policy's wait: fair, in line, woken by a single ZooKeeper watch.

An acquisition keeps its place in line on the first conflicting object, drops what it had after
it (holding places on later objects while waiting could deadlock two sets), and sleeps on a
watch of the nearest conflicting lock below its own, so a release wakes the next waiter with one
notification.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ....errors import LockManagerUnavailableError
from ....locks.model import GrantDecision, LockData, LockRequest
from ...base import AcquisitionCancelled, HeldLocks, Refusal, WaitReporter, conflict_error
from ..wire.ops import children_of
from .creation import LockNode
from .grants import MAX_RESTARTS, GrantSteps, Restart
from .wait_graph import MAX_LOOK_INTERVAL, WaitGraph

if TYPE_CHECKING:
    from ..wire.session import SharedZooKeeperClient

#: Registers a granted set: (nodes, data, owner, session generation) -> the held locks, or None
#: when the session was lost meanwhile.
Register = Callable[[Sequence[LockNode], LockData, str, int], "HeldLocks | None"]

log = logging.getLogger("sparklock.zookeeper")

#: A queued waiter looks at its cancel flag and deadline this often (no ZooKeeper traffic).
WAIT_SLICE = 0.05


class _Cancelled(Exception):
    pass


class _Deadline(Exception):
    pass


@dataclass(eq=False)
class QueuedAcquisition:
    """One queued acquisition of a lock set: its place in line, its nodes, its attempts, and the
    refusal it reports if it gives up."""

    steps: GrantSteps
    register: Register
    shared: SharedZooKeeperClient  # whose session generation tells a lost session
    quorum: str
    lock_set: Sequence[LockRequest]
    data: LockData
    owner: str
    waiter: WaitReporter
    cancel: threading.Event | None
    deadline: float  # time.monotonic() at which it gives up
    started: float = field(default_factory=time.monotonic)
    attempts: int = 0
    refusal: Refusal | None = None
    generation: int = 0  # the session the current pass started in
    mine: list[LockNode] = field(default_factory=list)  # every node held by the current pass
    #: where the waits are published and cycles looked for (None: no deadlock detection)
    graph: WaitGraph | None = None
    look_every: float = MAX_LOOK_INTERVAL
    next_look: float = 0.0
    blocker_keys: tuple[str, ...] = ()

    def run(self) -> HeldLocks:
        """Wait in line for the whole set (starting over when the session or a node is lost)."""
        try:
            return self._run()
        finally:
            if self.graph is not None and self.refusal is not None:
                self.graph.withdraw(self.owner, self.data.query_id)

    def _run(self) -> HeldLocks:
        steps = self.steps
        for _ in range(MAX_RESTARTS):
            self.generation = self.shared.generation
            self.mine = []
            try:
                held = self._once()
            except Restart as why:
                log.warning("sparklock: query %s starts over: %s", self.data.query_id, why)
                steps.drop(self.mine)
                continue
            except _Deadline:
                steps.drop(self.mine)
                assert self.refusal is not None
                waited = time.monotonic() - self.started
                raise conflict_error(self.refusal, self.attempts, waited) from None
            except _Cancelled:
                steps.drop(self.mine)
                assert self.refusal is not None
                raise AcquisitionCancelled(self.refusal.request.name) from None
            except BaseException:
                steps.drop(self.mine)
                raise
            if held is not None:
                return held
            steps.drop(self.mine)
        raise LockManagerUnavailableError(
            f"ZooKeeper {self.quorum}: locks kept disappearing while acquiring them "
            f"({MAX_RESTARTS} attempts)"
        )

    def _once(self) -> HeldLocks | None:
        """One pass over the set; ``mine`` collects every node we hold (``run`` cleans up)."""
        steps = self.steps
        pending = list(enumerate(self.lock_set))
        while pending:
            nodes = steps.create(pending, self.data, self.owner)
            self.mine.extend(nodes)
            self.attempts += 1
            conflict = steps.check(nodes, self.owner)
            if conflict is None:
                break
            node, decision = conflict
            # Keep what is granted before it and our place in line on it; holding places on
            # later objects while waiting could deadlock two sets, so those go.
            later = [n for n in nodes if n.index > node.index]
            steps.drop(later)
            for n in later:
                self.mine.remove(n)
            if not self.data.wait_since_ms:  # the set's later locks: since when it waited
                self.data = replace(self.data, wait_since_ms=node.data.lock_time_ms)
            self._wait_turn(node, decision)
            steps.mark_acquired(node)  # SHOW LOCKS: granted now, no longer WAITING
            pending = [(i, r) for i, r in pending if i > node.index]
        return self.register(self.mine, self.data, self.owner, self.generation)

    def _refuse(self, node: LockNode, decision: GrantDecision) -> Refusal:
        """Name who is in the way (only ever read on a conflict) and report it from now on."""
        holders = self.steps.holders(node.request.obj, decision.blockers)
        self.refusal = Refusal(node.request, holders)
        self.blocker_keys = tuple(c.key for c in decision.blockers)
        return self.refusal

    def _look_for_deadlock(self) -> None:
        """Publish what it waits for and give up if it is a deadlock's victim (DeadlockError)."""
        if self.graph is None or self.refusal is None:
            return
        self.next_look = time.monotonic() + self.look_every
        self.graph.look(self.owner, self.data.query_id, self.refusal, self.data.wait_since_ms)

    def _check_interrupted(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise _Cancelled()
        if self.shared.generation != self.generation:
            raise Restart("ZooKeeper session lost while waiting")

    def _wait_turn(self, node: LockNode, decision: GrantDecision) -> None:
        """Sleep on a watch of the nearest conflicting lock below ours until ours is granted."""
        steps = self.steps
        transport = steps.transport
        self.waiter.waiting(self._refuse(node, decision))
        self._look_for_deadlock()
        while not decision.granted:
            nearest = decision.nearest_blocker
            assert nearest is not None
            fired = threading.Event()

            def watch(_event, fired=fired) -> None:
                fired.set()

            stat = transport.retrying(
                lambda key=nearest.key: transport.client().exists(key, watch=watch),
                "watching a lock",
            )
            if stat is not None:
                while not fired.wait(min(WAIT_SLICE, max(0.0, self.deadline - time.monotonic()))):
                    self._check_interrupted()
                    if time.monotonic() >= self.deadline:
                        self._refuse(node, decision)
                        raise _Deadline()
                    assert self.refusal is not None
                    self.waiter.waiting(self.refusal)
                    if time.monotonic() >= self.next_look:
                        self._look_for_deadlock()
            self._check_interrupted()
            (children,) = transport.read([children_of(node.object_path)], "checking locks")
            if not isinstance(children, list):
                raise Restart(f"object node of {node.path} disappeared")
            decision = steps.decide(node, children, self.owner)
            self.attempts += 1
            if not decision.granted and time.monotonic() >= self.deadline:
                self._refuse(node, decision)
                raise _Deadline()
            if not decision.granted and self.graph is not None:
                if tuple(c.key for c in decision.blockers) != self.blocker_keys:
                    self._refuse(node, decision)  # others in the way now: publish them
                    self._look_for_deadlock()
