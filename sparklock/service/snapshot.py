"""What the Spark UI's Locks tab shows: this application's locks as one JSON-ready snapshot.

A user whose query hangs opens the Spark UI; this is what it then tells them, read fresh from
every lock manager this process uses (embedded, ZooKeeper, metastore alike, through
``list_locks(waiting=True)``): the locks this application's sessions hold and wait for, the
holders they wait behind (another session, another application, a Hive client), who waits for
whom (the wait-for graph, with any cycle in it), and the waits that ended lately
(:mod:`sparklock.managers.recent_waits`). In the Thrift and Connect servers the sessions are
the server's sessions, one row each.

The JVM asks for it through the bridge (``LockCallback.locksSnapshot``) when the page or its JSON
endpoint is read, so nothing is computed while nobody looks. Query texts are the lock data's,
already cut to what the ``spark.sparklock.lock.queryString.*`` settings allow.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..locks.model import LockInfo, LockMode, LockState
from ..locks.wait_for import WaitEdge
from ..locks.wait_for import deadlocks as find_deadlocks
from ..managers import LockManager, recent_waits
from ..managers.registry import open_managers

log = logging.getLogger("sparklock")

#: Rows per table at most (a wide read holds a lock per partition); the rest is counted.
MAX_ROWS = 500
#: How long the page waits for a manager's listing (an unreachable one hides only its locks).
LIST_DEADLINE_S = 2.0
#: ``blocked_by`` text of one blocker (``sparklock.locks.waiting.blocker_text``).
_BLOCKER = re.compile(r"^(SHARED|EXCLUSIVE) (\S+) query_id=(.*)$")
#: The metastore's: the blocking request's id (its locks are listed as ``<id>.<component>``).
_REQUEST_BLOCKER = re.compile(r"^lock (\d+)$")


def snapshot_json(request_json: str = "{}") -> str:
    """The bridge's answer: the snapshot, or ``{"ok": false, "error": ...}`` (never raises)."""
    try:
        request = json.loads(request_json or "{}")
        body = snapshot(
            app_id=str(request.get("appId") or ""),
            max_rows=int(request.get("maxRows") or MAX_ROWS),
        )
        return json.dumps({"ok": True, **body})
    except Exception as e:  # noqa: BLE001 - a page that cannot render must not break anything
        log.warning("sparklock: the Locks tab's snapshot failed", exc_info=True)
        return json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"})


def snapshot(app_id: str = "", max_rows: int = MAX_ROWS) -> dict[str, Any]:
    """The locks of this application, on every manager this process has open.

    Ours are the locks this process took (the manager knows their owner) and, for locks it
    cannot tell apart that way (a ZooKeeper ``retry`` waiter's marker), those whose lock data
    names ``app_id`` as their agent.
    """
    now = int(time.time() * 1000)
    managers: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    waiting: list[dict[str, Any]] = []
    blockers: dict[tuple[str, str, str], dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    sessions: dict[str, dict[str, Any]] = {}
    for manager, infos, error in _listings(open_managers()):
        entry: dict[str, Any] = {"kind": manager.kind, "error": error}
        managers.append(entry)
        if infos is None:
            continue
        by_query: dict[str, LockInfo] = {}
        by_request: dict[str, list[LockInfo]] = {}
        for info in infos:
            if info.state is LockState.ACQUIRED:
                by_query.setdefault(info.data.query_id, info)
                by_request.setdefault(info.lock_id.split(".", 1)[0], []).append(info)
        ours = [i for i in infos if i.owner is not None or (app_id and i.data.agent == app_id)]
        entry["locks"] = len(infos)
        for info in ours:
            row = _row(info, now, manager.kind)
            _count(sessions, row, info)
            if info.state is LockState.WAITING:
                row["blockedBy"] = [
                    _blocker(_named(text, info, by_request), by_query, now, manager.kind)
                    for text in info.blocked_by
                ]
                for b in row["blockedBy"]:
                    blockers.setdefault((b["object"], b["queryId"], b["mode"]), b)
                waiting.append(row)
            else:
                held.append(row)
        edges.extend(_edges(r for r in waiting if r["manager"] == manager.kind))
    return {
        "generatedMs": now,
        "appId": app_id,
        "managers": managers,
        "sessions": sorted(sessions.values(), key=lambda s: s["owner"]),
        "held": held[:max_rows],
        "waiting": waiting[:max_rows],
        "blockers": list(blockers.values())[:max_rows],
        "truncated": max(0, len(held) - max_rows) + max(0, len(waiting) - max_rows),
        "edges": edges,
        "deadlocks": deadlocks(edges),
        "recent": recent_waits.recent(),
    }


def _listings(
    managers: Sequence[LockManager],
) -> list[tuple[LockManager, list[LockInfo] | None, str]]:
    """Every manager's locks, asked side by side and waited for at most
    :data:`LIST_DEADLINE_S`: an unreachable backend (a ZooKeeper that is gone) costs the page
    that long once, and hides only its own locks, with the reason."""
    if not managers:
        return []
    pool = ThreadPoolExecutor(max_workers=len(managers), thread_name_prefix="sparklock-snapshot")
    futures = [pool.submit(m.list_locks, None, waiting=True) for m in managers]
    pool.shutdown(wait=False)  # a listing past the deadline ends by its own timeouts
    deadline = time.monotonic() + LIST_DEADLINE_S
    out: list[tuple[LockManager, list[LockInfo] | None, str]] = []
    for manager, future in zip(managers, futures, strict=True):
        try:
            out.append((manager, future.result(max(0.0, deadline - time.monotonic())), ""))
        except TimeoutError:
            out.append((manager, None, f"no answer within {LIST_DEADLINE_S:g} s"))
        except Exception as e:  # noqa: BLE001 - one unreachable manager hides only its locks
            out.append((manager, None, f"{type(e).__name__}: {e}"))
    return out


def _node(owner: str | None, agent: str, query_id: str) -> str:
    """A wait-for graph node: the session (owner) of a lock of ours, the foreign statement
    (its agent and query id) of a lock whose owner this process does not know."""
    return owner if owner else f"{agent or '?'} {query_id}"


def _row(info: LockInfo, now: int, kind: str) -> dict[str, Any]:
    d = info.data
    since = (d.wait_since_ms or d.lock_time_ms) if info.state is LockState.WAITING else None
    since = since or d.acquired_ms or d.lock_time_ms
    return {
        "object": info.name,
        "mode": info.mode.value,
        "state": info.state.value,
        "type": d.lock_type.value,
        "owner": _node(info.owner, d.agent, d.query_id),
        "queryId": d.query_id,
        "query": d.query_string,
        "user": d.user,
        "agent": d.agent,
        "client": d.client,
        "sinceMs": since,
        "forMs": max(0, now - since) if since else 0,
        "manager": kind,
    }


def _named(text: str, waiter: LockInfo, by_request: dict[str, list[LockInfo]]) -> str:
    """A metastore blocker (``lock <request id>``) in the form the other managers write:
    the request's lock on the waiter's object (else its first), mode and query id."""
    m = _REQUEST_BLOCKER.match(text)
    locks = by_request.get(m.group(1), []) if m else []
    if not locks:
        return text
    lock = next((i for i in locks if i.obj == waiter.obj), locks[0])
    return f"{lock.mode.value} {lock.name} query_id={lock.data.query_id}"


def _blocker(text: str, by_query: dict[str, LockInfo], now: int, kind: str) -> dict[str, Any]:
    """One entry of a WAITING row's ``blocked_by``, with what the holder's lock data says."""
    m = _BLOCKER.match(text)
    mode, obj, query_id = m.groups() if m else ("", text, "")
    found = by_query.get(query_id)
    if found is None:
        return {"object": obj, "mode": mode, "queryId": query_id, "owner": f"? {query_id}",
                "ours": False, "query": "", "user": "", "agent": "", "client": "",
                "sinceMs": 0, "forMs": 0, "manager": kind}  # fmt: skip
    row = _row(found, now, kind)
    row.update(object=obj, mode=mode or row["mode"], ours=found.owner is not None)
    return row


def _count(sessions: dict[str, dict[str, Any]], row: dict[str, Any], info: LockInfo) -> None:
    """One row per owner (a session; in a server, a JDBC or Connect session)."""
    s = sessions.setdefault(
        row["owner"],
        {"owner": row["owner"], "user": row["user"], "agent": row["agent"],
         "client": row["client"], "held": 0, "waiting": 0, "sinceMs": row["sinceMs"]},
    )  # fmt: skip
    s["waiting" if info.state is LockState.WAITING else "held"] += 1
    s["sinceMs"] = min(s["sinceMs"] or row["sinceMs"], row["sinceMs"] or s["sinceMs"])


def _edges(waiting: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The wait-for edges: each waiting request of ours points at the owner of each blocker."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in waiting:
        for b in row["blockedBy"]:
            key = (row["owner"], b["owner"], b["object"])
            out.setdefault(
                key,
                {"waiter": row["owner"], "holder": b["owner"], "object": b["object"],
                 "mode": row["mode"], "holderMode": b["mode"], "queryId": row["queryId"],
                 "sinceMs": row["sinceMs"]},
            )  # fmt: skip
    return list(out.values())


def _mode(text: str | None) -> LockMode:
    """A listed mode; a blocker whose mode could not be read counts as EXCLUSIVE."""
    return LockMode.SHARED if (text or "").upper() == "SHARED" else LockMode.EXCLUSIVE


def deadlocks(edges: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cycles among the edges' owners (:mod:`sparklock.locks.wait_for`): each as its nodes
    in order, its edges and the waiter the detector's rule gives up (the youngest)."""
    waits = [
        WaitEdge(
            e["waiter"],
            e["holder"],
            e["object"],
            _mode(e.get("mode")),
            _mode(e.get("holderMode")),
            e.get("sinceMs") or 0,
        )
        for e in edges
    ]
    by_key = {(e["waiter"], e["holder"], e["object"]): e for e in edges}
    return [
        {
            "nodes": [w.waiter for w in found.cycle],
            "edges": [by_key[(w.waiter, w.holder, w.obj)] for w in found.cycle],
            "victim": found.victim,
        }
        for found in find_deadlocks(waits)
    ]
