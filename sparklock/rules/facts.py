"""The facts of one statement, as the JVM shim hands them over: the bridge contract, typed once.

The JVM writes them as JSON from Java records (``jvm-shim/.../Facts.java``, Jackson); these frozen
dataclasses are the same shapes on this side, parsed once where the callback receives them
(:func:`parse_facts`), so ``policy`` and ``service`` read attributes, never dict keys. The JSON
field names are the wire format: each is the camelCase of the dataclass field (``partition_columns``
↔ ``partitionColumns``); :func:`to_wire` writes a parsed value back, which a Spark test compares
with the JVM's own JSON (the two definitions agree, or it fails). Facts only, no policy.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, ClassVar, TypeVar

_T = TypeVar("_T")

Spec = Mapping[str, "str | None"]
"""A partition spec: column → value in the table's column order (None: Hive's default partition)."""


def _parse(fn: Any) -> dict[str, Any]:
    """Field metadata: how :func:`parse_facts` converts the field's JSON value."""
    return {"parse": fn}


def _specs(v: list) -> tuple[Spec, ...]:
    return tuple(v)  # the decoded dicts themselves: a wide read has thousands


def _owner(v: Mapping[str, Any]) -> OwnerTable:
    return _read(OwnerTable, v)


# -- objects read or written ----------------------------------------------------------------
@dataclass(frozen=True)
class OwnerTable:
    """The session-catalog table whose location is a path or contains it (the deepest)."""

    catalog: str | None
    database: str | None
    table: str | None
    partition_columns: tuple[str, ...] = ()
    partition: Spec | None = field(default=None, metadata=_parse(dict))  # from col=value dirs


@dataclass(frozen=True)
class TableRef:
    """A table or view of a catalog. ``partitions``: those read (after pruning); None = unknown.

    ``database`` is the session catalog's database, or another catalog's namespace: its parts
    joined by ``.``, a part holding ``.`` in backticks (``rules.targets.namespace_parts``)."""

    kind: ClassVar[str] = "table"
    catalog: str | None = None
    database: str | None = None
    table: str | None = None
    partition_columns: tuple[str, ...] = ()
    partitions: tuple[Spec, ...] | None = field(default=None, metadata=_parse(_specs))
    is_view: bool = False
    is_temp: bool = False
    provider: str | None = None
    location: str | None = None


@dataclass(frozen=True)
class PathRef:
    """A file path no catalog table names (qualified, no trailing slash), and its owner table."""

    kind: ClassVar[str] = "path"
    path: str | None = None
    owner_table: OwnerTable | None = field(default=None, metadata=_parse(_owner))


@dataclass(frozen=True)
class ConnectorRef:
    """A table no catalog or path names: a v2 table (noop, console), nothing to lock (no
    ``target``), or a JDBC table read by ``dbtable`` (``target`` as in ``ConnectorField``)."""

    kind: ClassVar[str] = "connector"
    name: str | None = None
    target: str | None = None


ObjectRef = TableRef | PathRef | ConnectorRef


@dataclass(frozen=True)
class WriteRef:
    """A write: its target (flattened into the same JSON object) and how it writes.

    ``partition_columns`` is set only for a path target (the write's own partitioning); a table
    target carries the table's."""

    target: ObjectRef = field(metadata={"unwrapped": True})
    partition_columns: tuple[str, ...] | None = field(
        default=None, metadata={"omit_none": True, "parse": tuple}
    )
    static_partition: Spec = field(default_factory=dict, metadata=_parse(dict))
    dynamic_columns: tuple[str, ...] = ()
    overwrite: bool = False
    dynamic_partition_overwrite: bool = False
    file_based: bool = False
    #: equality constraints every row it deletes or adds satisfies (column → values, Hive's
    #: partition-value text): a v2 insert's static partition, Delta's ``REPLACE WHERE``
    row_constraints: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict, metadata=_parse(lambda v: {k: tuple(x) for k, x in v.items()})
    )


# -- the root command's fields --------------------------------------------------------------------
@dataclass(frozen=True)
class TableField:
    """A field naming a table or view. ``exists``: None when the catalog was not asked."""

    kind: ClassVar[str] = "table"
    name: str
    catalog: str | None = None
    database: str | None = None
    table: str | None = None
    exists: bool | None = None
    partition_columns: tuple[str, ...] = ()
    is_view: bool = False
    is_temp: bool = False


@dataclass(frozen=True)
class PathField:
    """A field naming a path (a Hadoop Path, a file index root, a Delta log's data path)."""

    kind: ClassVar[str] = "path"
    name: str
    path: str | None = None
    owner_table: OwnerTable | None = field(default=None, metadata=_parse(_owner))


@dataclass(frozen=True)
class ConnectorField:
    """A field naming a table of an external system (a JDBC ``url`` + ``dbtable``), by its
    credential-free identity ``target``."""

    kind: ClassVar[str] = "connector"
    name: str
    target: str | None = None


@dataclass(frozen=True)
class DatabaseField:
    kind: ClassVar[str] = "database"
    name: str
    catalog: str | None = None
    database: str | None = None


@dataclass(frozen=True)
class PartitionSpecsField:
    """Every partition spec one field holds (a Seq of specs is one field)."""

    kind: ClassVar[str] = "partitionSpecs"
    name: str
    specs: tuple[Spec, ...] = field(default=(), metadata=_parse(_specs))


@dataclass(frozen=True)
class ConstraintsField:
    """The rows a command writes as equality constraints on its target's columns (column →
    values, Hive's partition-value text), with the target's partition columns: what a Delta
    DELETE/UPDATE/MERGE condition, ``OPTIMIZE ... WHERE`` or ``replaceWhere`` pins."""

    kind: ClassVar[str] = "constraints"
    name: str
    partition_columns: tuple[str, ...] = ()
    values: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict, metadata=_parse(lambda v: {k: tuple(x) for k, x in v.items()})
    )


@dataclass(frozen=True)
class ValueField:
    """A scalar field (a view type, a flag) as its text."""

    kind: ClassVar[str] = "value"
    name: str
    value: str | None = field(default=None, metadata=_parse(str))


FieldRef = (
    TableField
    | PathField
    | ConnectorField
    | DatabaseField
    | PartitionSpecsField
    | ConstraintsField
    | ValueField
)


@dataclass(frozen=True)
class Facts:
    """One execution (or EXPLAIN LOCKS statement): BRIDGE.md "Facts JSON"."""

    session: str | None = None
    execution_id: str | None = None
    root_execution_id: str | None = None
    sql: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict, metadata=_parse(dict))
    current_database: str | None = None
    command: str | None = None
    command_class: str | None = None
    reads: tuple[ObjectRef, ...] = field(
        default=(), metadata=_parse(lambda v: tuple(_object_ref(r) for r in v))
    )
    writes: tuple[WriteRef, ...] = field(
        default=(), metadata=_parse(lambda v: tuple(_write_ref(w) for w in v))
    )
    fields: tuple[FieldRef, ...] = field(
        default=(), metadata=_parse(lambda v: tuple(_field_ref(f) for f in v if "name" in f))
    )
    enclosing_handles: tuple[str, ...] = ()
    job_group: str | None = None
    job_tags: tuple[str, ...] = ()
    #: who runs the statement: a server session's user and client address, else the Spark user
    user: str | None = None
    client_address: str | None = None
    #: for whom it runs: the server session (``thrift/<id>``, ``connect/<id>``), else the Spark
    #: application id (SHOW LOCKS EXTENDED's ``agent``)
    agent: str | None = None


# -- parsing: JSON → dataclasses ------------------------------------------------------------------
def parse_facts(wire: str | Mapping[str, Any]) -> Facts:
    """The facts of JSON text (or an already decoded object); missing keys take the defaults."""
    return _read(Facts, json.loads(wire) if isinstance(wire, str) else wire)


def _read(cls: type[_T], d: Mapping[str, Any], **given: Any) -> _T:
    """A ``cls`` from its JSON object: each field from its wire name; absent or null → default.

    A field's ``parse`` metadata converts its JSON value; tuples and booleans convert by default."""
    values = dict(given)
    for f in fields(cls):
        v = None if f.name in values else d.get(wire_name(f.name))
        if v is None:
            continue
        parse = f.metadata.get("parse")
        if parse is not None:
            v = parse(v)
        elif isinstance(f.default, tuple):
            v = tuple(v)
        elif isinstance(f.default, bool):
            v = bool(v)
        values[f.name] = v
    return cls(**values)


_REF_KINDS: dict[str, type] = {c.kind: c for c in (TableRef, PathRef, ConnectorRef)}
_FIELD_KINDS: dict[str, type] = {
    c.kind: c
    for c in (
        TableField,
        PathField,
        ConnectorField,
        DatabaseField,
        PartitionSpecsField,
        ConstraintsField,
        ValueField,
    )
}


def _of_kind(kinds: Mapping[str, type], d: Mapping[str, Any]) -> type:
    kind = d.get("kind", "table")
    if kind not in kinds:
        raise ValueError(
            f"unknown kind {kind!r} in the facts (sparklock/rules/facts.py): {dict(d)}"
        )
    return kinds[kind]


def _object_ref(d: Mapping[str, Any]) -> ObjectRef:
    return _read(_of_kind(_REF_KINDS, d), d)


def _write_ref(d: Mapping[str, Any]) -> WriteRef:
    target = _object_ref(d)
    if isinstance(target, TableRef):  # its partitionColumns are the table's, in the target
        return _read(WriteRef, d, target=target, partition_columns=None)
    return _read(WriteRef, d, target=target)


def _field_ref(d: Mapping[str, Any]) -> FieldRef:
    return _read(_of_kind(_FIELD_KINDS, d), d)


# -- writing: dataclasses → JSON ------------------------------------------------------------------
@functools.cache
def wire_name(python_name: str) -> str:
    """The JSON name of a dataclass field: its camelCase (``is_view`` → ``isView``)."""
    head, *rest = python_name.split("_")
    return head + "".join(p.title() for p in rest)


def to_wire(value: Any) -> Any:
    """A parsed value as the JSON object the JVM writes (tests, debugging, the recorder)."""
    if is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        kind = getattr(type(value), "kind", None)
        if kind is not None:
            out["kind"] = kind
        for f in fields(value):
            v = getattr(value, f.name)
            if f.metadata.get("unwrapped"):
                out.update(to_wire(v))
            elif not (v is None and f.metadata.get("omit_none")):
                out[wire_name(f.name)] = to_wire(v)
        return out
    if isinstance(value, Mapping):
        return {k: to_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_wire(v) for v in value]
    return value
