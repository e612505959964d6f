"""The facts of one statement, as the JVM shim hands them over: the bridge contract, typed once.

The JVM writes them as JSON from Java records (``jvm-shim/.../Facts.java``, Jackson); these frozen
dataclasses are the same shapes on this side, parsed once where the callback receives them
(:func:`parse_facts`), so ``policy`` and ``service`` read attributes, never dict keys. The JSON
field names are the wire format: each is the camelCase of the dataclass field (``partition_columns``
↔ ``partitionColumns``); :func:`to_wire` writes a parsed value back, which a Spark test compares
with the JVM's own JSON (the two definitions agree, or it fails). Facts only, no policy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, ClassVar

Spec = Mapping[str, "str | None"]
"""A partition spec: column → value in the table's column order (None: Hive's default partition)."""


# -- objects read or written ----------------------------------------------------------------
@dataclass(frozen=True)
class OwnerTable:
    """The session-catalog table whose location is a path or contains it (the deepest)."""

    catalog: str | None
    database: str | None
    table: str | None
    partition_columns: tuple[str, ...] = ()
    partition: Spec | None = None  # the leading spec named by the path's col=value dirs


@dataclass(frozen=True)
class TableRef:
    """A table or view of a catalog. ``partitions``: those read (after pruning); None = unknown."""

    kind: ClassVar[str] = "table"
    catalog: str | None = None
    database: str | None = None
    table: str | None = None
    partition_columns: tuple[str, ...] = ()
    partitions: tuple[Spec, ...] | None = None
    is_view: bool = False
    is_temp: bool = False
    provider: str | None = None
    location: str | None = None


@dataclass(frozen=True)
class PathRef:
    """A file path no catalog table names (qualified, no trailing slash), and its owner table."""

    kind: ClassVar[str] = "path"
    path: str | None = None
    owner_table: OwnerTable | None = None


@dataclass(frozen=True)
class ConnectorRef:
    """A v2 table no catalog names (noop, console): nothing to lock."""

    kind: ClassVar[str] = "connector"
    name: str | None = None


ObjectRef = TableRef | PathRef | ConnectorRef


@dataclass(frozen=True)
class WriteRef:
    """A write: its target (flattened into the same JSON object) and how it writes.

    ``partition_columns`` is set only for a path target (the write's own partitioning); a table
    target carries the table's."""

    target: ObjectRef = field(metadata={"unwrapped": True})
    partition_columns: tuple[str, ...] | None = field(default=None, metadata={"omit_none": True})
    static_partition: Spec = field(default_factory=dict)
    dynamic_columns: tuple[str, ...] = ()
    overwrite: bool = False
    dynamic_partition_overwrite: bool = False
    file_based: bool = False


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
    owner_table: OwnerTable | None = None


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
    specs: tuple[Spec, ...] = ()


@dataclass(frozen=True)
class ValueField:
    """A scalar field (a view type, a flag) as its text."""

    kind: ClassVar[str] = "value"
    name: str
    value: str | None = None


FieldRef = TableField | PathField | DatabaseField | PartitionSpecsField | ValueField


@dataclass(frozen=True)
class Facts:
    """One execution (or EXPLAIN LOCKS statement): BRIDGE.md "Facts JSON"."""

    session: str | None = None
    execution_id: str | None = None
    root_execution_id: str | None = None
    sql: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    current_database: str | None = None
    command: str | None = None
    command_class: str | None = None
    reads: tuple[ObjectRef, ...] = ()
    writes: tuple[WriteRef, ...] = ()
    fields: tuple[FieldRef, ...] = ()
    enclosing_handles: tuple[str, ...] = ()
    job_group: str | None = None
    job_tags: tuple[str, ...] = ()


# -- parsing: JSON → dataclasses ------------------------------------------------------------------
def parse_facts(wire: str | Mapping[str, Any]) -> Facts:
    """The facts of JSON text (or an already decoded object); missing keys take the defaults."""
    d = json.loads(wire) if isinstance(wire, str) else wire
    return Facts(
        session=d.get("session"),
        execution_id=d.get("executionId"),
        root_execution_id=d.get("rootExecutionId"),
        sql=d.get("sql"),
        conf=dict(d.get("conf") or {}),
        current_database=d.get("currentDatabase"),
        command=d.get("command"),
        command_class=d.get("commandClass"),
        reads=tuple(_object_ref(r) for r in d.get("reads") or ()),
        writes=tuple(_write_ref(w) for w in d.get("writes") or ()),
        fields=tuple(_field_ref(f) for f in d.get("fields") or () if "name" in f),
        enclosing_handles=tuple(d.get("enclosingHandles") or ()),
        job_group=d.get("jobGroup"),
        job_tags=tuple(d.get("jobTags") or ()),
    )


def _strings(v: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(v or ())


def _specs(v: Sequence[Spec] | None) -> tuple[Spec, ...]:
    return tuple(dict(s) for s in v or ())


def _owner(d: Mapping[str, Any] | None) -> OwnerTable | None:
    if d is None:
        return None
    return OwnerTable(
        catalog=d.get("catalog"),
        database=d.get("database"),
        table=d.get("table"),
        partition_columns=_strings(d.get("partitionColumns")),
        partition=None if d.get("partition") is None else dict(d["partition"]),
    )


def _object_ref(d: Mapping[str, Any]) -> ObjectRef:
    kind = d.get("kind", "table")
    if kind == "path":
        return PathRef(path=d.get("path"), owner_table=_owner(d.get("ownerTable")))
    if kind == "connector":
        return ConnectorRef(name=d.get("name"))
    partitions = d.get("partitions")
    return TableRef(
        catalog=d.get("catalog"),
        database=d.get("database"),
        table=d.get("table"),
        partition_columns=_strings(d.get("partitionColumns")),
        partitions=None if partitions is None else _specs(partitions),
        is_view=bool(d.get("isView")),
        is_temp=bool(d.get("isTemp")),
        provider=d.get("provider"),
        location=d.get("location"),
    )


def _write_ref(d: Mapping[str, Any]) -> WriteRef:
    target = _object_ref(d)
    own = d.get("partitionColumns") if not isinstance(target, TableRef) else None
    return WriteRef(
        target=target,
        partition_columns=None if own is None else _strings(own),
        static_partition=dict(d.get("staticPartition") or {}),
        dynamic_columns=_strings(d.get("dynamicColumns")),
        overwrite=bool(d.get("overwrite")),
        dynamic_partition_overwrite=bool(d.get("dynamicPartitionOverwrite")),
        file_based=bool(d.get("fileBased")),
    )


def _field_ref(d: Mapping[str, Any]) -> FieldRef:
    name = d["name"]
    kind = d.get("kind")
    if kind == "table":
        return TableField(
            name=name,
            catalog=d.get("catalog"),
            database=d.get("database"),
            table=d.get("table"),
            exists=d.get("exists"),
            partition_columns=_strings(d.get("partitionColumns")),
            is_view=bool(d.get("isView")),
            is_temp=bool(d.get("isTemp")),
        )
    if kind == "path":
        return PathField(name=name, path=d.get("path"), owner_table=_owner(d.get("ownerTable")))
    if kind == "database":
        return DatabaseField(name=name, catalog=d.get("catalog"), database=d.get("database"))
    if kind == "partitionSpecs":
        return PartitionSpecsField(name=name, specs=_specs(d.get("specs")))
    return ValueField(name=name, value=None if d.get("value") is None else str(d["value"]))


# -- writing: dataclasses → JSON ------------------------------------------------------------------
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
