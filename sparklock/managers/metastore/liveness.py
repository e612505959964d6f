"""Whether the owner of each metastore lock still lives, read from the metastore's heartbeats.

The metastore keeps a lock while its client heartbeats it and its housekeeper removes it once
the last heartbeat is older than ``metastore.txn.timeout``: a lock whose heartbeat is that old
has an owner that stopped (it is about to go), a younger one a living owner. A transaction's
lock is heartbeated through its transaction, not itself, so its row says nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from ...locks.model import LockInfo
from . import mapping


def owners_alive(
    infos: Sequence[LockInfo],
    rows: Iterable,
    mine: Collection[int],
    timeout_s: float,
    now_s: float,
) -> list[bool | None]:
    """Per lock of ``infos``: True for this process's own requests (``mine``) and for another
    client's heartbeated within ``timeout_s`` of ``now_s`` (this host's clock), False once its
    heartbeat is older, None (unknown) for a transaction's lock and for a lock gone from
    ``rows`` (the metastore's ``show_locks``) meanwhile."""
    beats = {mapping.lock_id(r): (r.lastheartbeat or 0, r.txnid or 0) for r in rows}
    oldest_ms = (now_s - timeout_s) * 1000
    out: list[bool | None] = []
    for info in infos:
        request = info.lock_id.partition(".")[0]
        beat, txnid = beats.get(info.lock_id, (0, 0))
        if request.isdigit() and int(request) in mine:
            out.append(True)
        elif txnid or not beat:
            out.append(None)
        else:
            out.append(beat >= oldest_ms)
    return out
