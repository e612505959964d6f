"""The last waits and refusals of this process, for the Spark UI's Locks tab.

A hung or failed statement is easier to explain after the fact when its wait is still visible:
what it waited for, behind whom, for how long and how it ended. :class:`WaitReporter` (the one
place every manager reports a wait through) records a wait that ended, granted after waiting or
refused; the ring keeps the last :data:`CAPACITY`, so memory stays bounded whatever the load.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Sequence
from typing import Any

from ..locks.model import LockInfo

#: How many ended waits are kept (the oldest goes first).
CAPACITY = 50
#: Query text kept per entry (the UI shows a line, not the statement).
QUERY_CHARS = 300

_guard = threading.Lock()
_ring: collections.deque[dict[str, Any]] = collections.deque(maxlen=CAPACITY)


def holder_row(info: LockInfo) -> dict[str, Any]:
    """Who stands in the way, as the UI and its JSON show it."""
    d = info.data
    return {
        "object": info.name,
        "mode": info.mode.value,
        "type": d.lock_type.value,
        "queryId": d.query_id,
        "user": d.user,
        "agent": d.agent,
        "client": d.client,
        "query": d.query_string[:QUERY_CHARS],
        "sinceMs": d.acquired_ms or d.lock_time_ms,
    }


def record(
    *,
    query_id: str,
    outcome: str,
    obj: str,
    mode: str,
    waited_s: float,
    holders: Sequence[LockInfo] = (),
    error: str = "",
) -> None:
    """One wait ended: ``outcome`` is ``GRANTED`` or the refusal's condition."""
    entry = {
        "endedMs": int(time.time() * 1000),
        "queryId": query_id,
        "outcome": outcome,
        "object": obj,
        "mode": mode,
        "waitedMs": int(waited_s * 1000),
        "holders": [holder_row(h) for h in holders],
        "error": error[:1000],
    }
    with _guard:
        _ring.append(entry)


def recent() -> list[dict[str, Any]]:
    """The ended waits kept, newest first."""
    with _guard:
        return list(reversed(_ring))


def clear() -> None:
    """Forget every entry (tests)."""
    with _guard:
        _ring.clear()
