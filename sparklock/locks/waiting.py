"""Who waits for whom: the ``state`` of a listed lock and what its SHOW LOCKS columns say.

Both managers list waiting requests beside granted locks. A request waiting in line (the
``queue`` policy, or an embedded waiter) is a lock entry like any other: its state follows from
the grant rule over its siblings (:func:`model.decide`), the rule the waiter itself applies, so
another session or another driver reading the same tree sees the same answer. A request of the
``retry`` policy has no entry while it sleeps between attempts: the managers publish a marker
for it instead (:meth:`LockManager._show_waiting`), listed as a WAITING row.

The times: ``lock_time`` is when the entry was created; a request that waited carries ``w=``
(since when it waits, when that is earlier than its entry) and, once granted, ``a=`` (when)
in its data. A lock granted at once has neither: it was acquired at its ``lock_time``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from .model import Contender, LockInfo, LockState, decide

#: How one blocker is named in ``blocked_by``.
BLOCKER_SEPARATOR = "; "


def blocker_text(info: LockInfo) -> str:
    """``EXCLUSIVE default@t query_id=<id>``: the mode, the object and the query in the way."""
    return f"{info.mode.value} {info.name} query_id={info.data.query_id or '?'}"


def acquired_at(info: LockInfo) -> str:
    """Epoch ms of the grant as text; empty while waiting."""
    if info.state is LockState.WAITING:
        return ""
    return str(info.data.acquired_ms or info.data.lock_time_ms)


def wait_since(info: LockInfo) -> str:
    """Epoch ms since when the request waits (or waited, once granted); empty if it never did."""
    d = info.data
    if d.wait_since_ms:
        return str(d.wait_since_ms)
    if info.state is LockState.WAITING or d.acquired_ms:
        return str(d.lock_time_ms)
    return ""


def with_states(
    infos: Sequence[LockInfo],
    seq_of: Callable[[LockInfo], int],
    is_own_explicit: Callable[[LockInfo, Contender], bool],
) -> list[LockInfo]:
    """The locks of ONE object, each with its state and blockers by the grant rule.

    ``seq_of`` gives an entry's place in line; ``is_own_explicit(info, c)`` whether contender
    ``c`` does not count for ``info`` (its owner's own explicit or enclosing lock: known only
    for the locks of this process). A lock whose data says it was granted (``a=``) is granted
    whatever its siblings: its owner knew what the reader cannot (a foreign owner's exemptions).
    """
    contenders = [Contender(seq_of(i), i.mode, i.lock_id) for i in infos]
    by_key = {i.lock_id: i for i in infos}
    out = []
    for info, mine in zip(infos, contenders, strict=True):
        if info.data.acquired_ms:
            out.append(dataclasses.replace(info, state=LockState.ACQUIRED, blocked_by=()))
            continue
        decision = decide(mine, contenders, lambda c, info=info: is_own_explicit(info, c))
        if decision.granted:
            out.append(dataclasses.replace(info, state=LockState.ACQUIRED, blocked_by=()))
        else:
            blockers = tuple(blocker_text(by_key[c.key]) for c in decision.blockers)
            out.append(dataclasses.replace(info, state=LockState.WAITING, blocked_by=blockers))
    return out


def waiting_row(info: LockInfo, holders: Sequence[LockInfo]) -> LockInfo:
    """A ``retry`` request between attempts as a WAITING row on the object it was refused."""
    return dataclasses.replace(
        info,
        state=LockState.WAITING,
        blocked_by=tuple(blocker_text(h) for h in holders),
    )
