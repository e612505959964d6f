"""Lock escalation (opt-in): a statement's many partition locks of one table become one lock.

Applied by the policy to a statement's requests before ancestors are added; see
:class:`~sparklock.locks.statement_settings.Escalation` for the setting and
:func:`escalate` for the rule.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from ..locks.model import LockMode, LockRequest
from ..locks.objects import LockObject, ObjectKind
from ..locks.statement_settings import Escalation

S, X = LockMode.SHARED, LockMode.EXCLUSIVE


def conf_escalation(conf: Mapping[str, str] | None) -> Escalation:
    """The escalation the ``spark.sparklock.lock.escalation.*`` keys of a statement's conf say
    (parsed once per distinct setting)."""
    if not conf:
        return Escalation()
    keys = ("spark.sparklock.lock.escalation.partitions", "spark.sparklock.lock.escalation.reads")
    return _cached_escalation(tuple((k, str(conf[k])) for k in keys if k in conf))


@functools.lru_cache(maxsize=64)
def _cached_escalation(items: tuple[tuple[str, str], ...]) -> Escalation:
    return Escalation.from_conf(dict(items))


def escalate(requests: list[LockRequest], escalation: Escalation) -> list[LockRequest]:
    """Fewer objects for statements that lock many partitions of one table (opt-in).

    Per table, counting the distinct partitions (and prefixes) one statement locks:

    * more than ``escalation.partitions`` locked EXCLUSIVE: EXCLUSIVE on the table replaces every
      partition lock of it. Stronger than what it replaces (every partition lock of anyone else
      carries SHARED on the table) and Hive-compatible.
    * with ``escalation.reads``, more than ``escalation.partitions`` locked at all: SHARED on the
      table and SHARED on its writers facet replace the SHARED partition locks (the EXCLUSIVE ones,
      at most the threshold, stay). Partition writers take SHARED on the table only, so this is
      correct only because, with ``reads`` on, every partition EXCLUSIVE lock also takes
      EXCLUSIVE on its table's writers facet (added here to every statement, escalated or not).
      A statement that already holds SHARED on a table's facet (``read_requests`` escalated one
      big read early) counts as escalated for that table.
    """
    if not escalation.enabled:
        return requests
    limit = escalation.partitions
    by_table: dict[LockObject, dict[LockObject, LockMode]] = {}
    early: set[LockObject] = set()  # tables read-escalated by read_requests
    for req in requests:
        if req.obj.kind is ObjectKind.PARTITION:
            table = LockObject.of_table(req.obj.database, req.obj.table or "")
            modes = by_table.setdefault(table, {})
            if modes.get(req.obj) is not X:
                modes[req.obj] = req.mode
        elif escalation.reads and req.obj.kind is ObjectKind.FACET and req.mode is S:
            early.add(LockObject.of_table(req.obj.database, req.obj.table or ""))
    replace: dict[LockObject, LockMode] = {}  # table -> escalated mode
    for table, modes in by_table.items():
        if sum(m is X for m in modes.values()) > limit:
            replace[table] = X
        elif escalation.reads and (len(modes) > limit or table in early):
            replace[table] = S
    out: list[LockRequest] = []
    added: set[LockObject] = set()
    for req in requests:
        obj = req.obj
        table = (
            LockObject.of_table(obj.database, obj.table or "")
            if obj.kind is ObjectKind.PARTITION
            else None
        )
        mode = replace.get(table) if table is not None else None
        if mode is X or (mode is S and req.mode is S):
            if table not in added:
                added.add(table)
                out.append(LockRequest(table, mode))
                if mode is S:
                    out.append(LockRequest(LockObject.table_writers(obj.database, obj.table), S))
            continue
        out.append(req)
        if escalation.reads and table is not None and req.mode is X:
            out.append(LockRequest(LockObject.table_writers(obj.database, obj.table), X))
    return out
