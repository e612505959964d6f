"""The statement text a lock's data carries (``spark.sparklock.lock.queryString.*``).

Hive writes the whole statement into every lock node (``queryStr``, the fourth field), literals
included, readable by anyone who can read the ensemble. ``mode=summary`` keeps only what the
facts already say without the text: the statement's kind (the class of its root plan node) and
the objects it locks -- names that are in the znode paths anyway -- so no literal of a predicate,
a VALUES list or a string constant reaches ZooKeeper. ``maxLength`` cuts either text (Hive's
``hive.lock.query.string.max.length``; 0 keeps none; the cut itself is ``LockData.now``'s).
Hive's parser still reads the data: a summary has no ``:`` (the field separator).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..locks.model import LockMode, LockRequest
from ..locks.objects import LockObject, ObjectKind
from ..locks.statement_settings import QueryText


def _group(obj: LockObject) -> LockObject:
    """The database or table a request belongs to (a partition's or facet's table)."""
    if obj.table is None:
        return obj
    return LockObject.of_table(obj.database, obj.table) if not obj.is_path else obj


def _strongest(modes: Iterable[LockMode]) -> LockMode:
    return LockMode.EXCLUSIVE if LockMode.EXCLUSIVE in set(modes) else LockMode.SHARED


def summary(kind: str, requests: Iterable[LockRequest]) -> str:
    """``<kind> <MODE> <object>, <MODE> <n> partition(s) of <table>, ...`` (by name)."""
    whole: dict[LockObject, list[LockMode]] = {}
    parts: dict[LockObject, dict[LockObject, list[LockMode]]] = {}
    for r in requests:
        if r.obj.kind is ObjectKind.FACET:
            continue  # sparklock's own bookkeeping object, not something the statement names
        if r.obj.kind is ObjectKind.PARTITION:
            parts.setdefault(_group(r.obj), {}).setdefault(r.obj, []).append(r.mode)
        else:
            whole.setdefault(r.obj, []).append(r.mode)
    items = []
    for obj in sorted(set(whole) | set(parts), key=lambda o: o.sort_key):
        if obj in whole:
            items.append(f"{_strongest(whole[obj]).value} {obj.name}")
        if obj in parts:
            n = len(parts[obj])
            mode = _strongest(m for ms in parts[obj].values() for m in ms)
            items.append(f"{mode.value} {n} partition{'s' if n != 1 else ''} of {obj.name}")
    return " ".join([kind or "statement", ", ".join(items)]).strip().replace(":", "")


def statement_text(
    setting: QueryText, full: str | None, kind: str, requests: Iterable[LockRequest]
) -> str:
    """What the lock data says about the statement, before ``maxLength`` (``LockData.now``)."""
    if setting.max_length == 0:
        return ""
    if setting.mode == "summary":
        return summary(kind, requests)
    return full or kind


def lock_statement_summary(obj: LockObject, mode: LockMode) -> str:
    """An explicit ``LOCK``'s summary: the statement as sparklock resolved it, no literals
    beyond the object's name."""
    what = "DATABASE" if obj.kind is ObjectKind.DATABASE else "TABLE"
    return f"LOCK {what} {obj.name} {mode.value}"
