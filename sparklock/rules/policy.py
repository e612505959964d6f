"""Which locks a statement takes: plan facts (from the JVM shim) → lock requests.

Pure Python and data-driven. The JVM hands over *facts* (tables and partitions read, tables
written with their static/dynamic partition spec, the root command's class and table-valued
fields); this module applies Hive's lock table to them, adapted to Spark:

* reads: SHARED on every table/view read and on every partition actually read (after pruning);
* writes: EXCLUSIVE on the static partition, the static prefix of a dynamic insert, or the table;
* Spark writers of one file-based table also take EXCLUSIVE on the table's writers facet, because
  they share ``<table>/_temporary`` (unlocked, concurrent inserts into different partitions fail),
  while readers of other partitions go on and Hive still sees exactly Hive's locks;
* every lock set then gets SHARED on all ancestors (``model.build_lock_set``);
* opt-in lock escalation (``escalate``) trades per-partition locks for one table lock when a
  statement touches many partitions of one table.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..locks.model import LockMode, LockRequest
from ..locks.objects import LockObject, ObjectKind
from ..locks.statement_settings import Escalation
from .command_classes import FAIL_SAFE
from .command_rule import CommandRule, Target
from .commands import BY_CLASS, NO_LOCK_CLASSES
from .escalation import conf_escalation as _escalation_of
from .escalation import escalate
from .facts import (
    ConstraintsField,
    Facts,
    FieldRef,
    ObjectRef,
    PartitionSpecsField,
    PathRef,
    Spec,
    TableField,
    TableRef,
    ValueField,
    WriteRef,
)
from .pinning import pinned_specs
from .targets import field_object, is_unnamed, owned, partition, partition_object, table_object

log = logging.getLogger("sparklock")

S, X = LockMode.SHARED, LockMode.EXCLUSIVE


def read_requests(
    ref: ObjectRef, current_db: str = "default", escalation: Escalation | None = None
) -> list[LockRequest]:
    """SHARED on the table (or view), and on every partition actually read."""
    table = table_object(ref, current_db)
    if table is None:
        return []
    if is_unnamed(table):
        return [LockRequest(table, X)]  # a catalog that could not name the table: fail closed
    if table.kind is not ObjectKind.TABLE:  # a path inside a table's partition directory
        return [LockRequest(table, S)]
    requests = [LockRequest(table, S)]
    if not isinstance(ref, TableRef):  # a path owned by a whole table
        return requests
    partitions = ref.partitions
    columns = ref.partition_columns
    if (
        escalation is not None
        and escalation.reads
        and escalation.enabled
        and partitions
        and len(partitions) > escalation.partitions
    ):
        # escalated (see ``escalate``) without making an object per partition first
        requests.append(LockRequest(LockObject.table_writers(table.database, table.table), S))
        return requests
    if partitions and columns:
        requests.extend(_shared_partitions(table, columns, partitions))
    return requests


#: How many tables keep their partition requests, and how many each (a request and its object,
#: names included, take about 1 KB; the objects' own cache is as bounded).
_REQUEST_TABLES = 4
_REQUESTS_PER_TABLE = 1 << 15


def _shared_partitions(
    table: LockObject, columns: tuple[str, ...], specs: Iterable[Spec]
) -> list[LockRequest]:
    """SHARED on each partition read, thousands for a full read of a wide table.

    The JVM names each spec's columns in the table's order, so a spec whose keys are exactly
    ``columns`` is found by its values among the table's requests made before (anything else
    goes the general way, :func:`_partition`): a request is made once per partition and reused
    by every statement that reads it, like its object."""
    columns = tuple(columns)
    keys = tuple(c.lower() for c in columns)
    database, name = table.database, table.table or ""
    made = _table_requests(database, name, keys)
    out = []
    for spec in specs:
        if tuple(spec) != columns:
            out.append(LockRequest(partition(table, columns, spec), S))
            continue
        values = tuple(spec.values())
        req = made.get(values)
        if req is None:
            if len(made) >= _REQUESTS_PER_TABLE:
                made.clear()  # wider than kept: made again, statement by statement
            items = tuple(zip(keys, values, strict=True))
            req = made[values] = LockRequest(partition_object(database, name, items), S)
        out.append(req)
    return out


@functools.lru_cache(maxsize=_REQUEST_TABLES)
def _table_requests(
    database: str, table: str, keys: tuple[str, ...]
) -> dict[tuple[str | None, ...], LockRequest]:
    """One table's SHARED partition requests, by their values in ``keys`` order (filled by
    :func:`_shared_partitions`; two threads making the same one make equal requests)."""
    return {}


def write_requests(ref: WriteRef, current_db: str = "default") -> list[LockRequest]:
    """EXCLUSIVE on what an insert replaces or adds to, per Hive's design (HIVE-3509 fixed)."""
    target = ref.target
    table = table_object(target, current_db)
    if table is None:
        return []
    if isinstance(target, PathRef):
        # A write by path: EXCLUSIVE on the path, or on the table (partition) owning it. The
        # write's own partitioning is relative to the path, so it is not used to narrow further.
        requests = [LockRequest(table, X)]
        if owned(target) and ref.file_based:
            requests.append(LockRequest(LockObject.table_writers(table.database, table.table), X))
        return requests
    columns = target.partition_columns if isinstance(target, TableRef) else ()
    static = ref.static_partition
    locked = [table]
    if columns and static:
        locked = [partition(table, columns, static)]
        if locked[0].partition == ():
            locked = [table]
    elif columns and ref.row_constraints:
        pinned = pinned_specs(columns, ref.row_constraints)
        locked = [partition(table, columns, spec) for spec in pinned] or [table]
    requests = [LockRequest(obj, X) for obj in locked]
    if ref.file_based:
        requests.append(LockRequest(LockObject.table_writers(table.database, table.table), X))
    return requests


@dataclass(frozen=True)
class Plan:
    """The requests of one statement, before ancestors are added."""

    requests: list[LockRequest]
    command: str


def _specs(ref: FieldRef | None) -> list[Spec]:
    if not isinstance(ref, PartitionSpecsField):
        return []
    return [s for s in ref.specs if s]


def _in_database_of(ref: FieldRef, source: FieldRef | None) -> FieldRef:
    """``ref`` moved into ``source``'s catalog and database (``Target.database_from``).

    A temporary view at ``source`` makes ``ref`` one too; with no table at ``source`` the name
    stays as reported (the lock may be wrong in database, never missing)."""
    if not isinstance(ref, TableField) or not isinstance(source, TableField):
        return ref
    return dataclasses.replace(
        ref, catalog=source.catalog, database=source.database, is_temp=source.is_temp
    )


Fields = Mapping[str, "list[FieldRef]"]
"""The command's fields by name; a name holds several (a file index's roots, CALL's args)."""


def _first(fields: Fields, name: str) -> FieldRef | None:
    refs = fields.get(name)
    return refs[0] if refs else None


def _target_requests(target: Target, fields: Fields, current_db: str) -> list[LockRequest]:
    requests = []
    for ref in fields.get(target.field, ()):
        if target.database_from is not None:
            ref = _in_database_of(ref, _first(fields, target.database_from))
        requests.extend(_field_requests(target, ref, fields, current_db))
    return requests


def _field_requests(
    target: Target, ref: FieldRef, fields: Fields, current_db: str
) -> list[LockRequest]:
    obj = field_object(ref, current_db)
    if obj is None:
        return []
    if is_unnamed(obj):
        return [LockRequest(obj, X)]  # a catalog that could not name the table: fail closed
    pins = _first(fields, target.pinned_by) if target.pinned_by else None
    if isinstance(pins, ConstraintsField) and obj.kind is ObjectKind.TABLE:
        pinned = pinned_specs(pins.partition_columns, pins.values)
        if pinned:
            cols = pins.partition_columns
            parts = [LockRequest(partition(obj, cols, spec), target.mode) for spec in pinned]
            return [LockRequest(obj, S), *parts]
    specs = _specs(_first(fields, target.partitions)) if target.partitions else []
    if not specs or obj.table is None:
        return [LockRequest(obj, target.mode)]
    columns = (isinstance(ref, TableField) and ref.partition_columns) or [str(k) for k in specs[0]]
    parts = [LockRequest(partition(obj, columns, spec), target.partition_mode) for spec in specs]
    return [LockRequest(obj, S), *parts]


def _rule_requests(rule: CommandRule, fields: Fields, current_db: str) -> list[LockRequest]:
    """A row's locks: its targets, unless its ``no_lock_when`` condition holds."""
    cond = rule.no_lock_when
    if cond is not None and _value(fields, cond.field) in cond.values:
        return []
    return [r for t in rule.targets for r in _target_requests(t, fields, current_db)]


def command_requests(facts: Facts) -> list[LockRequest]:
    """The root command's own targets, per the command table (``commands.RULES``), looked up by
    the command's full class name.

    An unrecognised command that names a table or database takes EXCLUSIVE on each (fail safe)
    and logs its class at WARNING, so a gap in the table costs concurrency, never safety. A class
    listed as fail-safe on purpose (``command_classes.FAIL_SAFE``) gets the same locks quietly.
    """
    class_name = facts.command_class or ""
    current_db = facts.current_database or "default"
    fields: dict[str, list[FieldRef]] = {}
    for f in facts.fields:
        fields.setdefault(f.name, []).append(f)
    rule = BY_CLASS.get(class_name)
    if rule is not None:
        return _rule_requests(rule, fields, current_db)
    if class_name in NO_LOCK_CLASSES:
        return []
    named = [o for f in facts.fields if (o := field_object(f, current_db)) is not None]
    if named and class_name not in FAIL_SAFE:
        log.warning(
            "sparklock: command %s is not in the command table; taking EXCLUSIVE on %s",
            class_name or facts.command,
            ", ".join(o.name for o in named),
        )
    return [LockRequest(o, X) for o in named]


def _value(fields: Fields, name: str) -> str | None:
    ref = _first(fields, name)
    return ref.value if isinstance(ref, ValueField) else None


def requests_for(facts: Facts, escalation: Escalation | None = None) -> Plan:
    """All lock requests for one execution's facts: reads, writes, the command's own targets.

    ``escalation`` defaults to the ``spark.sparklock.lock.escalation.*`` keys of the facts' conf.
    """
    current_db = facts.current_database or "default"
    if escalation is None:
        escalation = _escalation_of(facts.conf)
    requests: list[LockRequest] = []
    for ref in facts.reads:
        requests.extend(read_requests(ref, current_db, escalation))
    for ref in facts.writes:
        requests.extend(write_requests(ref, current_db))
    requests.extend(command_requests(facts))
    return Plan(escalate(requests, escalation), facts.command or "")
