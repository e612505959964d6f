"""Deadlock detection across drivers: every waiting statement publishes its waits, each reads all.

A waiting statement knows only its own blockers; a cycle through other drivers is visible only
if every waiter says whom it waits for where the others can read it. So each waiting sparklock
statement keeps one ephemeral node ``/<namespace>/_sparklock-waits/WAIT-<hash of its node>``
whose data (JSON) names its owner, its query id, since when it waits and its edges: the holder
node (:func:`holder_node`), the object, both modes and the holder's lock node. It is written when
the statement starts waiting and when its blockers change, and deleted when it is granted,
refused or cancelled (a dead driver's goes with its ZooKeeper session).

Every waiter reads the whole container (one multiRead: a consistent snapshot of the current
waiters only) when it starts waiting and then every ``min(retryInterval, 1 s)``, builds the
wait-for graph (:mod:`sparklock.locks.wait_for`) and, if it is the victim of a cycle, reads the
cycle once more (its waiters' nodes unchanged, its holders' lock nodes still there) and gives
up with :class:`~sparklock.errors.DeadlockError`. The victim rule is deterministic over the
published data, so every reader picks the same one without talking to the others.

Hive's own clients publish nothing: a cycle through a Hive client is not seen. A lock's holder
is named from its data's ``s=`` (owner) field; a lock without one (Hive's, or older data) is a
node of its own that never waits, so it can never close a cycle.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.handlers.threading import KazooTimeoutError

from ....errors import DeadlockError, SparkLockError
from ....locks.model import LockInfo, LockMode, LockType
from ....locks.wait_for import Deadlock, WaitEdge, deadlocks, runs, statement
from ...held import Refusal
from ..layout import WAITS_CONTAINER
from ..wire.ops import children_of, data_of, node_data
from ..wire.transport import Transport

log = logging.getLogger("sparklock.zookeeper")

WAIT_PREFIX = "WAIT-"
#: Publishing and reading are best effort: they never hold a waiting statement up longer.
GRAPH_TIMEOUT = 2.0
#: A waiter looks at the graph at least this often (and at every retry attempt).
MAX_LOOK_INTERVAL = 1.0


def holder_node(info: LockInfo) -> str:
    """The wait-for node of a lock's holder: its session for an explicit lock (it stays until
    UNLOCK), its statement for an implicit one. A lock whose data names no owner (Hive's) is
    named by its client: such a holder publishes no waits, so it never closes a cycle."""
    d = info.data
    who = d.owner or info.owner or f"hive client {d.client or '?'}"
    if d.lock_type is LockType.EXPLICIT:
        return who
    return statement(who, d.query_id)


@dataclass
class _Published:
    path: str
    generation: int
    payload: bytes


@dataclass(frozen=True)
class _Read:
    """One waiter's node as read: its edges and the lock node behind each."""

    path: str
    payload: bytes
    edges: tuple[WaitEdge, ...]
    locks: tuple[str, ...]


def encode(owner: str, query_id: str, since_ms: int, refusal: Refusal) -> bytes:
    """A waiter's node data: who waits, since when, and for whom."""
    edges = [
        {
            "holder": holder_node(h),
            "object": refusal.request.obj.name,
            "mode": refusal.request.mode.value,
            "holder_mode": h.mode.value,
            "lock": h.lock_id,
        }
        for h in refusal.holders
    ]
    body = {"owner": owner, "query": query_id, "since": since_ms, "edges": edges}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


def decode(path: str, payload: bytes) -> _Read | None:
    """The edges a waiter's node states; None for data that is not one (never fails)."""
    try:
        body = json.loads(payload.decode("utf-8"))
        owner, query, since = str(body["owner"]), str(body["query"]), int(body["since"])
        waiter = statement(owner, query)
        edges = [runs(owner, query, since)]
        locks = [""]
        for e in body["edges"]:
            mode, held = LockMode(e["mode"]), LockMode(e["holder_mode"])
            edges.append(WaitEdge(waiter, str(e["holder"]), str(e["object"]), mode, held, since))
            locks.append(str(e["lock"]))
    except (ValueError, KeyError, TypeError):
        return None
    return _Read(path, payload, tuple(edges), tuple(locks))


class WaitGraph:
    """One namespace's published waits: publish, withdraw, and look for a cycle."""

    def __init__(self, transport: Transport, root: str) -> None:
        self.transport = transport
        self.container = f"{root.rstrip('/')}/{WAITS_CONTAINER}"
        self._lock = threading.Lock()
        self._published: dict[str, _Published] = {}

    def path_of(self, owner: str, query_id: str) -> str:
        digest = hashlib.sha1(statement(owner, query_id).encode("utf-8")).hexdigest()
        return f"{self.container}/{WAIT_PREFIX}{digest}"

    # -- the waiter's side ----------------------------------------------------------------------
    def look(self, owner: str, query_id: str, refusal: Refusal, since_ms: int) -> None:
        """Publish what the statement waits for now, read everyone's, and raise
        :class:`DeadlockError` if it waits in a cycle and is its victim."""
        try:
            self._publish(owner, query_id, encode(owner, query_id, since_ms, refusal))
            found = self._deadlock_of(statement(owner, query_id))
        except (SparkLockError, KazooException, KazooTimeoutError) as exc:
            log.debug("sparklock: no deadlock check this time (%r)", exc)
            return
        if found is not None:
            log.warning("sparklock: %s", found.describe())
            req = refusal.request
            raise DeadlockError(req.name, req.mode.value, found.describe(), found.victim)

    def withdraw(self, owner: str, query_id: str) -> None:
        """The statement no longer waits: its node goes (with an old session: gone already)."""
        with self._lock:
            shown = self._published.pop(statement(owner, query_id), None)
        if shown is None or shown.generation != self.transport.shared.generation:
            return
        try:
            self._call(lambda: self.transport.client().delete(shown.path))
        except NoNodeError:
            pass
        except (SparkLockError, KazooException, KazooTimeoutError) as exc:
            # it goes with the session at the latest; readers check a cycle's nodes again
            log.warning("sparklock: could not remove wait node %s (%r)", shown.path, exc)
            return
        try:  # the last one out leaves no container behind (as the WAITING markers do)
            self.transport.client().delete(self.container)
        except (NotEmptyError, NoNodeError):
            pass
        except (SparkLockError, KazooException, KazooTimeoutError) as exc:
            log.debug("sparklock: could not remove %s (%r)", self.container, exc)

    def _publish(self, owner: str, query_id: str, payload: bytes) -> None:
        node = statement(owner, query_id)
        generation = self.transport.shared.generation
        with self._lock:
            shown = self._published.get(node)
        if shown is not None and shown.generation == generation:
            if shown.payload != payload:
                try:
                    self._call(lambda: self.transport.client().set(shown.path, payload))
                except NoNodeError:
                    self._call(lambda: self._create(shown.path, payload))
            path = shown.path
        else:
            path = self.path_of(owner, query_id)
            self._call(lambda: self._create(path, payload))
        with self._lock:
            self._published[node] = _Published(path, generation, payload)

    def _create(self, path: str, payload: bytes) -> None:
        client = self.transport.client()
        for _ in range(3):  # the container may go between makepath's two creates: again
            try:
                client.create(path, payload, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                client.set(path, payload)  # a retried create whose first try went through
                return
            except NoNodeError:
                continue
        raise NoNodeError(self.container)

    def _call(self, fn) -> None:
        self.transport.retrying(fn, "publishing a wait", GRAPH_TIMEOUT)

    # -- everyone's waits -------------------------------------------------------------------------
    def read(self) -> list[_Read]:
        """Every published wait, from one consistent read of the container's nodes."""
        (names,) = self.transport.read([children_of(self.container)], "reading waits")
        if not isinstance(names, list):
            return []
        paths = [f"{self.container}/{n}" for n in names if n.startswith(WAIT_PREFIX)]
        got = self.transport.read([data_of(p) for p in paths], "reading waits")
        reads = []
        for path, result in zip(paths, got, strict=True):
            payload = node_data(result)
            read = decode(path, payload) if payload is not None else None
            if read is not None:
                reads.append(read)
        return reads

    def edges(self) -> list[WaitEdge]:
        """The wait-for graph's edges as published now."""
        return [e for r in self.read() for e in r.edges]

    def _deadlock_of(self, node: str) -> Deadlock | None:
        """The cycle ``node`` is the victim of, confirmed by a second read; None otherwise."""
        reads = self.read()
        for found in deadlocks(e for r in reads for e in r.edges):
            if found.victim == node and self._still_there(found, reads):
                return found
        return None

    def _still_there(self, found: Deadlock, reads: list[_Read]) -> bool:
        """Whether the cycle's waiters still publish what was read and its holders' lock nodes
        still exist (one read): a waiter granted meanwhile, or a lock released, is no cycle."""
        by_waiter = {r.edges[0].holder: r for r in reads}  # runs(): a statement's own node
        waits: dict[str, bytes] = {}
        locks: set[str] = set()
        for edge in found.cycle:
            if not edge.is_wait:
                continue
            read = by_waiter.get(edge.waiter)
            if read is None:
                return False
            waits[read.path] = read.payload
            locks.update(read.locks[i] for i, e in enumerate(read.edges) if e == edge)
        ops = [data_of(p) for p in waits] + [data_of(p) for p in sorted(locks) if p]
        got = self.transport.read(ops, "confirming a deadlock")
        for payload, result in zip(waits.values(), got, strict=False):
            if node_data(result) != payload:
                return False
        return all(node_data(r) is not None for r in got[len(waits) :])
