"""Who waits for whom, across owners: the wait-for graph, its cycles, and the victim of a deadlock.

One statement's lock set is sorted and taken all or nothing, so two statements alone never
deadlock. Explicit locks break that: a session holds ``LOCK TABLE a`` while it asks for ``b``,
and another holds ``b`` while it asks for ``a``. Each waiting request points at the owners whose
locks (granted or queued ahead of it) stand in its way; a cycle of such edges never untangles by
itself, so one waiter in it must give up.

The nodes are statements and sessions. A waiting statement points at what holds the lock in its
way: the statement, for an implicit lock (it releases when that statement ends), or the session,
for an explicit one (it releases only when the session says UNLOCK). A session points at each of
its own waiting statements (:func:`runs`): while one waits, the session says nothing else. So
two statements of one session in two threads never look like a cycle, and a session that holds
``LOCK TABLE a`` while its statement waits for ``b`` does.

Every participant that looks at the same graph must pick the same victim, without talking to the
others: the rule is deterministic over what the graph itself carries. The victim is the
**youngest waiting statement** of the cycle (the one that started waiting last: it has lost the
least work), ties broken by the larger node name. Pure: no manager, no Spark; the managers build
the edges from what they hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .model import LockMode


@dataclass(frozen=True)
class WaitEdge:
    """``waiter`` waits for a lock on ``obj`` that ``holder`` holds (or requested before it)."""

    waiter: str
    holder: str
    obj: str
    waiter_mode: LockMode
    holder_mode: LockMode
    #: since when the waiter waits (epoch ms; 0 when unknown)
    since_ms: int = 0

    @property
    def is_wait(self) -> bool:
        """A statement waiting for a lock (not a session waiting for its own statement)."""
        return bool(self.obj)

    def describe(self) -> str:
        if not self.is_wait:
            return f"{self.waiter} waits for its own {self.holder}"
        return (
            f"{self.waiter} waits for {self.waiter_mode.value} on {self.obj}, "
            f"held {self.holder_mode.value} by {self.holder}"
        )


def statement(owner: str, query_id: str) -> str:
    """The node of one statement (a lock set) of ``owner``."""
    return f"{owner} statement {query_id}"


def runs(owner: str, query_id: str, since_ms: int = 0) -> WaitEdge:
    """``owner`` (a session) waits for its own waiting statement: its explicit locks stay until
    that statement is done."""
    return WaitEdge(
        owner, statement(owner, query_id), "", LockMode.SHARED, LockMode.SHARED, since_ms
    )


@dataclass(frozen=True)
class Deadlock:
    """A cycle of waits (each edge's holder is the next edge's waiter) and the one to give up."""

    cycle: tuple[WaitEdge, ...]
    victim: str

    @property
    def owners(self) -> tuple[str, ...]:
        return tuple(e.waiter for e in self.cycle)

    def describe(self) -> str:
        """The cycle in words, for the victim's error and the log: who holds and waits for what."""
        waits = "; ".join(e.describe() for e in self.cycle if e.is_wait)
        n = sum(1 for e in self.cycle if e.is_wait)
        return f"deadlock between {n} waiting statements: {waits}; victim: {self.victim}"


def _strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively (a wide graph must not exhaust Python's stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(sorted(component))
    return out


def _cycle_in(component: Sequence[str], by_waiter: Mapping[str, list[WaitEdge]]) -> list[WaitEdge]:
    """One simple cycle through the component's smallest owner (a walk that stays inside it)."""
    members = set(component)
    start = component[0]
    path: list[WaitEdge] = []
    seen = {start: 0}
    node = start
    while True:
        edge = min(
            (e for e in by_waiter.get(node, ()) if e.holder in members),
            key=lambda e: (e.holder, e.obj),
        )
        path.append(edge)
        if edge.holder in seen:
            return path[seen[edge.holder] :]
        seen[edge.holder] = len(path)
        node = edge.holder


def deadlocks(edges: Iterable[WaitEdge]) -> list[Deadlock]:
    """Every cyclic group of owners, each as one cycle with its victim; [] when none.

    A self-edge (an owner waiting behind itself) is not a deadlock: the grant rule already
    exempts an owner's own explicit locks, and whatever else it is waits for its own release."""
    by_waiter: dict[str, list[WaitEdge]] = {}
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.waiter == e.holder:
            continue
        by_waiter.setdefault(e.waiter, []).append(e)
        graph.setdefault(e.waiter, set()).add(e.holder)
        graph.setdefault(e.holder, set())
    found = []
    for component in _strongly_connected(graph):
        if len(component) < 2:
            continue
        cycle = tuple(_cycle_in(component, by_waiter))
        found.append(Deadlock(cycle, victim_of(cycle)))
    return found


def victim_of(cycle: Sequence[WaitEdge]) -> str:
    """The youngest waiting statement (latest ``since_ms``), ties to the larger node name: one
    answer for every reader of the same graph."""
    since: dict[str, int] = {}
    for e in cycle:
        if e.is_wait:
            since[e.waiter] = max(since.get(e.waiter, 0), e.since_ms)
    return max(since, key=lambda owner: (since[owner], owner))
