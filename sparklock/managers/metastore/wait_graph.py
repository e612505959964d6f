"""Deadlock detection in the metastore: the wait-for graph read from ``show_locks``.

The metastore keeps every request in one table and answers SHOW LOCKS from it in one query, so
every reader sees the same graph without anything published: a request that waits (state
``WAITING``, the ``queue`` policy keeps it there while it polls ``check_lock``) waits for every
earlier request (a lower request id: the metastore checks a request against those only, granted
or waiting) with a lock that conflicts with one of its own, and for the request its
``blockedByExtId`` names. Who owns a request comes from its agent info (:mod:`.agent_info`):

* a sparklock request's holder node is its session for an explicit lock (it stays until UNLOCK)
  and its statement for an implicit one; a waiting request is its statement, and its session
  waits for it (:func:`sparklock.locks.wait_for.runs`), as with the other managers;
* a Hive request names no owner: it is ``hive txn <id>`` when it belongs to a transaction (the
  transaction holds its earlier requests' locks until it ends) and ``hive request <id>``
  otherwise.

The victim is the youngest waiting sparklock statement of a cycle (:mod:`sparklock.locks.wait_for`):
"youngest" by request id, which the metastore hands out in the order requests start waiting and
every reader sees alike (the metastore keeps no time a request was made). A Hive client's
request cannot be made to give up, so it counts as the oldest: it is never the victim while the
cycle has a sparklock statement in it.

Pure: rows in, edges and a verdict out. The manager reads the rows (one ``show_locks``) when a
request starts waiting and then every :data:`LOOK_INTERVAL` while it waits, one listing shared
by the process's waiting requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...locks.model import LockMode, LockRequest, LockType
from ...locks.wait_for import Deadlock, WaitEdge, deadlocks, runs, statement
from . import agent_info, mapping, wire

#: A waiting request reads the graph when it starts waiting and then at most this often.
LOOK_INTERVAL = 0.5
#: The lock types whose conflicts sparklock models exactly; others (Hive's ACID writers' locks)
#: contribute only the edge the metastore itself names (``blockedByExtId``).
_MODELLED = {wire.SHARED_READ, wire.EXCLUSIVE}
_MODE = {wire.SHARED_READ: LockMode.SHARED, wire.EXCLUSIVE: LockMode.EXCLUSIVE}


@dataclass(frozen=True)
class _Request:
    """One request (all its components) as the graph sees it."""

    lockid: int
    rows: tuple
    owner: str  # "" for a Hive client's
    query_id: str
    explicit: bool
    txnid: int

    @property
    def holder(self) -> str:
        if not self.owner:
            return f"hive txn {self.txnid}" if self.txnid else f"hive request {self.lockid}"
        return self.owner if self.explicit else statement(self.owner, self.query_id)

    @property
    def waiter(self) -> str:
        if not self.owner:
            return self.holder
        return statement(self.owner, self.query_id)

    @property
    def waiting(self) -> bool:
        return any(r.state == wire.WAITING for r in self.rows)


def _requests(rows: Iterable) -> dict[int, _Request]:
    grouped: dict[int, list] = {}
    for r in rows:
        grouped.setdefault(r.lockid, []).append(r)
    out = {}
    for lockid, parts in grouped.items():
        named = agent_info.decode(parts[0].agentInfo)
        out[lockid] = _Request(
            lockid,
            tuple(parts),
            named.owner,
            named.query_id,
            named.lock_type is LockType.EXPLICIT,
            int(parts[0].txnid or 0),
        )
    return out


def _mode(row) -> LockMode:
    return _MODE.get(row.type, LockMode.EXCLUSIVE)


def _meets(mine, theirs) -> bool:
    """Whether component ``theirs`` (an earlier request's) keeps ``mine`` waiting."""
    if mine.type not in _MODELLED or theirs.type not in _MODELLED:
        return False
    request = LockRequest(mapping.row_object(mine), _MODE[mine.type])
    return mapping.conflicts(request, mapping.row_object(theirs), _mode(theirs))


_Key = tuple[str, str, str]


def _key(row) -> _Key:
    return ((row.dbname or "").lower(), (row.tablename or "").lower(), row.partname or "")


def _near(rows: Iterable) -> dict[_Key, list]:
    """Rows by database, table and partition (``""`` above that level)."""
    index: dict[_Key, list] = {}
    for r in rows:
        index.setdefault(_key(r), []).append(r)
    return index


def _candidates(mine, index: dict[_Key, list]) -> list:
    """The rows that can meet component ``mine`` at all: its own object's, its ancestors' and
    its descendants' (a wide read against a wide write stays linear in the rows)."""
    db, table, part = _key(mine)
    if not table:
        return [r for k, rs in index.items() if k[0] == db for r in rs]
    above = index.get((db, "", ""), []) + index.get((db, table, ""), [])
    if part:
        return above + index.get((db, table, part), [])
    return above + [r for k, rs in index.items() if k[:2] == (db, table) and k[2] for r in rs]


def _edges_of(
    w: _Request, requests: dict[int, _Request], index: dict[_Key, list]
) -> list[WaitEdge]:
    """A waiting request's edges: its session's to it, and its own to what is ahead of it."""
    since = w.lockid if w.owner else 0  # a Hive client's request is never the victim
    edges = [runs(w.owner, w.query_id, since)] if w.owner else []
    seen: set[tuple[str, str]] = set()

    def add(mine, other: _Request, theirs) -> None:
        if other.lockid == w.lockid:
            return
        if w.txnid and other.txnid == w.txnid:
            return  # one transaction's requests never wait for each other
        if w.owner and other.owner == w.owner and other.explicit:
            return  # its own session's LOCK TABLE: not a wait another owner could end
        key = (other.holder, mapping.row_object(mine).name)
        if key in seen:
            return
        seen.add(key)
        edges.append(WaitEdge(w.waiter, other.holder, key[1], _mode(mine), _mode(theirs), since))

    for mine in w.rows:
        if mine.state != wire.WAITING:
            continue
        if mine.blockedByExtId and mine.blockedByExtId in requests:
            other = requests[mine.blockedByExtId]
            match = [t for t in other.rows if t.lockIdInternal == mine.blockedByIntId]
            add(mine, other, (match or list(other.rows))[0])
        for theirs in _candidates(mine, index):
            if theirs.lockid < w.lockid and _meets(mine, theirs):
                add(mine, requests[theirs.lockid], theirs)
    return edges


def edges(rows: Sequence) -> list[WaitEdge]:
    """The wait-for graph of a SHOW LOCKS listing."""
    requests = _requests(rows)
    index = _near(rows)
    return [e for w in requests.values() if w.waiting for e in _edges_of(w, requests, index)]


def victim_cycle(rows: Sequence, lockid: int) -> Deadlock | None:
    """The cycle request ``lockid`` waits in and is the victim of (None if it is not one)."""
    me = _requests(r for r in rows if r.lockid == lockid).get(lockid)
    if me is None or not me.owner or not me.waiting:
        return None
    for found in deadlocks(edges(rows)):
        if found.victim == me.waiter:
            return found
    return None


def refused_edge(found: Deadlock) -> WaitEdge:
    """The victim's own wait in the cycle: what it asked for (its error names it)."""
    return next(e for e in found.cycle if e.is_wait and e.waiter == found.victim)
