"""What a reference names: the lock object of a table, path, connector or database the facts name.

Every catalog's objects are lockable. The session catalog's tables are Hive's objects
(``db@t``); a table of any other catalog (Iceberg, JDBC, ...) is an object of its catalog's
scope (``ice.db.t``, see :mod:`sparklock.locks.objects`), so the policy applies one rule to both.
Temporary views stay lock-free (their inputs are locked instead); a reference into another
catalog that names no table fails closed: its whole catalog is locked EXCLUSIVE, with a warning.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

from ..locks.objects import LockObject
from .facts import (
    ConnectorField,
    ConnectorRef,
    DatabaseField,
    FieldRef,
    ObjectRef,
    PathField,
    PathRef,
    Spec,
    TableField,
    TableRef,
)

log = logging.getLogger("sparklock")

SPARK_CATALOG = "spark_catalog"

Named = ObjectRef | TableField | PathField
"""What can name a lockable table or path: a read or write target, a command field."""


def namespace_parts(text: str | None) -> tuple[str, ...]:
    """A namespace as the JVM writes it (parts joined by ``.``, a part holding ``.`` or a
    backtick in backticks, as Spark quotes identifiers) back into its parts."""
    if not text:
        return ()
    parts: list[str] = []
    cur: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "`" and text[i + 1 : i + 2] == "`":
                cur.append("`")
                i += 1
            elif ch == "`":
                quoted = False
            else:
                cur.append(ch)
        elif ch == "`":
            quoted = True
        elif ch == ".":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return tuple(parts)


def is_session_catalog(catalog: str | None) -> bool:
    """Whether a reference is the session catalog's (no catalog named means it, as in Spark)."""
    return (catalog or SPARK_CATALOG).lower() == SPARK_CATALOG


def owned(ref: PathRef | PathField) -> bool:
    """Whether a catalog table owns the path (the JVM's ``ownerTable``)."""
    return ref.owner_table is not None and bool(ref.owner_table.table)


def _path_object(ref: PathRef | PathField, current_db: str) -> LockObject | None:
    """A path reference: the table (or partition) owning it, else the path's own object."""
    owner = ref.owner_table
    if owner is not None and owner.table:
        table = LockObject.of_table(owner.database or current_db, owner.table)
        spec = owner.partition or {}
        if spec:
            return partition(table, owner.partition_columns or list(spec), spec)
        return table
    return LockObject.of_path(str(ref.path)) if ref.path else None


def _catalog_table(catalog: str, database: str | None, table: str | None) -> LockObject:
    """A table of another catalog; the catalog itself when the reference names no table."""
    if not table:
        log.warning(
            "sparklock: a reference into catalog %s names no table; locking the catalog", catalog
        )
        return LockObject.of_catalog(catalog)
    return LockObject.of_catalog_table(catalog, namespace_parts(database), table)


def is_unnamed(obj: LockObject) -> bool:
    """Whether ``obj`` stands for a table its catalog could not name (the catalog, locked whole):
    such an object is always locked EXCLUSIVE (fail closed)."""
    return obj.catalog is not None and obj.table is None and not obj.namespace


def table_object(ref: Named, current_db: str = "default") -> LockObject | None:
    """The lock object of a table reference, or None for what no catalog holds.

    Path references resolve to the catalog table (or partition) owning the path, else to a path
    object (``LockObject.of_path``)."""
    if isinstance(ref, (PathRef, PathField)):
        return _path_object(ref, current_db)
    if isinstance(ref, ConnectorRef):
        return LockObject.of_connector(ref.target) if ref.target else None
    if not isinstance(ref, (TableRef, TableField)):
        return None
    if ref.is_temp:
        return None  # temporary views live in no catalog: their inputs are locked instead
    if not is_session_catalog(ref.catalog):
        return _catalog_table(str(ref.catalog), ref.database, ref.table)
    if not ref.table:
        return None
    return LockObject.of_table(ref.database or current_db, ref.table)


def field_object(ref: FieldRef, current_db: str) -> LockObject | None:
    """The object a command's field names (a database or namespace, a table, a path)."""
    if isinstance(ref, DatabaseField):
        if not is_session_catalog(ref.catalog):
            parts = namespace_parts(ref.database)
            catalog = str(ref.catalog)
            return (
                LockObject.of_namespace(catalog, parts) if parts else LockObject.of_catalog(catalog)
            )
        return LockObject.of_database(ref.database) if ref.database else None
    if isinstance(ref, (TableField, PathField)):
        return table_object(ref, current_db)
    if isinstance(ref, ConnectorField) and ref.target:
        return LockObject.of_connector(ref.target)
    return None


def partition(table: LockObject, columns: Iterable[str], spec: Spec) -> LockObject:
    """A partition (or prefix) in the table's partition-column order."""
    lowered = {str(k).lower(): v for k, v in spec.items()}
    items = []
    for col in columns:
        key = col.lower()
        if key not in lowered:
            break  # a prefix stops at the first column without a value
        items.append((key, lowered[key]))
    return partition_object(table.database, table.table or "", tuple(items))


@functools.lru_cache(maxsize=1 << 15)
def partition_object(
    database: str, table: str, items: tuple[tuple[str, str | None], ...]
) -> LockObject:
    """Made once per partition and reused by every statement that reads it: a wide read's lock
    set is thousands of partitions, each validated and named once, not per statement."""
    return LockObject.of_partition(database, table, items)
