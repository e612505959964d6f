"""Lockable objects: database, table, partition prefix, partition; and the same of any catalog.

Names of the session catalog follow Hive exactly so that Hive and sparklock agree on every znode:
database and table names lower-cased, partition names ``k1=v1/k2=v2`` escaped the way Hive and
Spark escape partition directories (``FileUtils.escapePathName``), display names joined with ``@``
(``db@t@k1=v1/k2=v2``), path components one per level.

Objects of any other catalog (a v2 catalog: Iceberg, JDBC, ...) live in a *scope*: the catalog and
its namespace, each part ending with ``.`` (``ice.``, ``ice.db.``, ``ice.a.b.``), held where a
Hive object holds its database. A scope is itself an object (the catalog, a namespace: what a
database is to Hive), so the hierarchy is catalog → namespace → ... → table → partition, and a
table is displayed as written (``ice.db.t``, ``ice.db.t@k=v``). No Hive database name contains a
``.`` (the session catalog's names are ``[A-Za-z0-9_]+``; a ``.`` in a session name is escaped
here), so a scope can never collide with a Hive name and Hive's own lock manager never locks one.

How a name is escaped into a component: :mod:`.names`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cached_property, lru_cache

from ..errors import InvalidObjectError
from .names import (
    DEFAULT_PARTITION_NAME,
    MAX_COMPONENT_LENGTH,
    SCOPE_END,
    canonical_scope,
    catalog_scope,
    check_length,
    escape_identifier,
    escape_path_name,
    is_scope,
    scope_components,
    scope_part,
    unescape_path_name,
)

__all__ = [
    "CONNECTORS_DATABASE",
    "DEFAULT_PARTITION_NAME",
    "FACET_PREFIX",
    "MAX_COMPONENT_LENGTH",
    "PATHS_DATABASE",
    "SCOPE_END",
    "WRITERS_FACET",
    "LockObject",
    "ObjectKind",
    "catalog_scope",
    "escape_path_name",
    "is_scope",
    "scope_components",
    "unescape_path_name",
]


class ObjectKind(str, Enum):
    DATABASE = "DATABASE"
    TABLE = "TABLE"
    PARTITION = "PARTITION"
    FACET = "FACET"


# Paths: files read or written by path with no catalog table owning them
# (``spark.read.parquet("/x")``, ``df.write.parquet("/x")``) lock a table-level object of a
# reserved pseudo-database. Its name has a "-", which neither Hive's metastore nor Spark's catalog
# accept in a database name ([A-Za-z0-9_]+), so it can never be a real database and Hive never
# locks it. The table component is the whole normalised path (``file:/tmp/x``), escaped like every
# name (``/`` -> ``%2F``, ``:`` -> ``%3A``) and lower-cased like table names: two paths differing
# only in case share one lock (more waiting, never a missed conflict). A path longer than a znode
# component allows is named by its SHA-256 instead (``sha256-<hex>``).
PATHS_DATABASE = "_sparklock-paths"
_PATH_HASH_PREFIX = "sha256-"
# Connector tables: tables of an external system that neither the catalog nor a path names (a
# JDBC table written with ``df.write.jdbc``/``format("jdbc")``) lock a table-level object of a
# second reserved pseudo-database, named like paths (escaped, lower-cased, hashed when too long).
CONNECTORS_DATABASE = "_sparklock-connectors"

# Facets are sparklock-only child objects of a table. Their component starts with "_sparklock_"
# and has no "=", so it can never collide with a partition ("k=v") and Hive ignores it.
FACET_PREFIX = "_sparklock_"
WRITERS_FACET = "writers"


def _component(name: str) -> str:
    """A path or connector target as one table component: itself, or its SHA-256 when too long."""
    if len(escape_path_name(name.lower())) > MAX_COMPONENT_LENGTH // 2:
        return _PATH_HASH_PREFIX + hashlib.sha256(name.lower().encode("utf-8")).hexdigest()
    return name


@dataclass(frozen=True)
class LockObject:
    """One node of the lock hierarchy.

    ``partition`` holds ``(column, value)`` pairs in the table's partition-column order; a spec that
    names only the first columns is a partition prefix. Values are kept raw; escaping happens when
    the object is turned into a name.
    """

    database: str
    table: str | None = None
    partition: tuple[tuple[str, str | None], ...] = ()
    facet: str | None = None

    def __post_init__(self) -> None:
        database = self.database or ""
        database = canonical_scope(database) if is_scope(database) else database.lower()
        object.__setattr__(self, "database", database)
        if self.table is not None:
            object.__setattr__(self, "table", self.table.lower())
        norm = tuple(
            (str(k).lower(), DEFAULT_PARTITION_NAME if v is None or v == "" else str(v))
            for k, v in self.partition
        )
        object.__setattr__(self, "partition", norm)
        if self.partition and self.table is None:
            raise InvalidObjectError("a partition needs a table")
        keys = [k for k, _ in self.partition]
        if len(set(keys)) != len(keys):
            raise InvalidObjectError(f"partition spec names a column twice: {keys}")
        for k in keys:
            if k == "":
                raise InvalidObjectError("partition column name must be non-empty")
        if self.facet is not None and (self.table is None or self.partition):
            raise InvalidObjectError("a facet belongs to a table")
        # Validate eagerly so a bad name fails where it was made, not deep in a manager.
        _ = self.components

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def of_database(cls, database: str) -> LockObject:
        return cls(database)

    @classmethod
    def of_table(cls, database: str, table: str) -> LockObject:
        return cls(database, table)

    @classmethod
    def of_partition(
        cls,
        database: str,
        table: str,
        spec: Mapping[str, str | None] | Iterable[tuple[str, str | None]],
    ) -> LockObject:
        items = tuple(spec.items()) if isinstance(spec, Mapping) else tuple(spec)
        return cls(database, table, items)

    @classmethod
    def of_catalog(cls, catalog: str) -> LockObject:
        """A catalog other than the session catalog, as a whole (``ice.``)."""
        return cls(catalog_scope(catalog))

    @classmethod
    def of_namespace(cls, catalog: str, namespace: Sequence[str]) -> LockObject:
        """A namespace of a catalog, of any depth (``ice.a.b.``)."""
        return cls(catalog_scope(catalog, namespace))

    @classmethod
    def of_catalog_table(cls, catalog: str, namespace: Sequence[str], table: str) -> LockObject:
        """A table of a catalog other than the session catalog (``ice.a.b.t``)."""
        return cls(catalog_scope(catalog, namespace), table)

    @property
    def catalog(self) -> str | None:
        """The catalog of an object in a catalog scope; None for Hive's (the session catalog's)."""
        if not is_scope(self.database):
            return None
        return unescape_path_name(scope_components(self.database)[0][: -len(SCOPE_END)])

    @property
    def namespace(self) -> tuple[str, ...]:
        """The namespace parts of an object in a catalog scope (empty for Hive's objects)."""
        if not is_scope(self.database):
            return ()
        comps = scope_components(self.database)[1:]
        return tuple(unescape_path_name(c[: -len(SCOPE_END)]) for c in comps)

    @classmethod
    def of_path(cls, path: str) -> LockObject:
        """The lock object of a file path no catalog table owns (see ``PATHS_DATABASE``)."""
        if not isinstance(path, str) or not path.strip("/"):
            raise InvalidObjectError(f"a path lock needs a non-root path, got {path!r}")
        norm = path.rstrip("/") if not path.endswith(":/") else path
        return cls(PATHS_DATABASE, _component(norm))

    @classmethod
    def of_connector(cls, target: str) -> LockObject:
        """The lock object of a connector table (see ``CONNECTORS_DATABASE``): ``target`` is its
        credential-free identity as the JVM reports it (``jdbc:derby:memory:db/app.t``)."""
        if not isinstance(target, str) or not target.strip():
            raise InvalidObjectError(f"a connector lock needs a target, got {target!r}")
        return cls(CONNECTORS_DATABASE, _component(target.strip()))

    @property
    def is_path(self) -> bool:
        """Whether this is a path object (``of_path``); its ``table`` is the (lower-cased) path."""
        return self.database == PATHS_DATABASE and self.table is not None and not self.partition

    @classmethod
    def table_writers(cls, database: str, table: str) -> LockObject:
        """The token Spark writers of one file-based table serialise on (shared ``_temporary``)."""
        return cls(database, table, facet=WRITERS_FACET)

    @classmethod
    def parse(cls, name: str) -> LockObject:
        """Parse a display name: Hive's (``db``, ``db@t``, ``db@t@k=v/k2=v2``) or a catalog's
        (``ice.``, ``ice.db.``, ``ice.db.t``, ``ice.db.t@k=v``, ``ice.db.t@_sparklock_writers``)."""
        head = name.split("@", 1)[0]
        if SCOPE_END in head:
            return cls._parse_scoped(name)
        parts = name.split("@", 2)
        db = unescape_path_name(parts[0])
        if len(parts) == 1:
            return cls(db)
        table = unescape_path_name(parts[1])
        if len(parts) == 2:
            return cls(db, table)
        return cls._below_table(db, table, parts[2], name)

    @classmethod
    def _parse_scoped(cls, name: str) -> LockObject:
        head, _, rest = name.partition("@")
        if is_scope(head):
            if rest:
                raise InvalidObjectError(f"a catalog or namespace has no parts below: {name!r}")
            return cls(head)
        scope, _, table = head.rpartition(SCOPE_END)
        table = unescape_path_name(table)
        if not rest:
            return cls(scope + SCOPE_END, table)
        return cls._below_table(scope + SCOPE_END, table, rest, name)

    @classmethod
    def _below_table(cls, db: str, table: str, rest: str, name: str) -> LockObject:
        """A facet or partition of ``db``'s ``table`` from the display name's last part."""
        if rest.startswith(FACET_PREFIX) and "=" not in rest:
            return cls(db, table, facet=rest[len(FACET_PREFIX) :])
        spec = []
        for comp in rest.split("/"):
            if "=" not in comp:
                raise InvalidObjectError(f"bad partition component {comp!r} in {name!r}")
            k, v = comp.split("=", 1)
            spec.append((unescape_path_name(k), unescape_path_name(v)))
        return cls(db, table, tuple(spec))

    # -- names --------------------------------------------------------------------------------
    @property
    def kind(self) -> ObjectKind:
        if self.table is None:
            return ObjectKind.DATABASE
        if self.facet is not None:
            return ObjectKind.FACET
        return ObjectKind.PARTITION if self.partition else ObjectKind.TABLE

    @cached_property  # frozen: computed once (escaping is per character; lock sets sort on it)
    def components(self) -> tuple[str, ...]:
        """Escaped path components, one per level: ``(db, t, "k=v", "k2=v2")``, or in a catalog
        scope ``("ice.", "a.", "t", "k=v")``."""
        if is_scope(self.database):
            comps = list(scope_components(self.database))
            if self.table is not None:
                comps.append(scope_part("table", self.table))
        else:
            comps = [escape_identifier("database", self.database)]
            if self.table is not None:
                comps.append(escape_identifier("table", self.table))
        for k, v in self.partition:
            comp = f"{escape_path_name(k)}={escape_path_name(v)}"
            check_length("partition", f"{k}={v}", comp)
            comps.append(comp)
        if self.facet is not None:
            comps.append(FACET_PREFIX + escape_path_name(self.facet))
        return tuple(comps)

    @property
    def _table_depth(self) -> int:
        """How many components name the table (or the database/scope when there is none)."""
        return self.scope_depth + (self.table is not None)

    @property
    def scope_depth(self) -> int:
        """How many components the database or catalog scope takes (1 for Hive's database)."""
        return self.database.count(SCOPE_END) if is_scope(self.database) else 1

    @property
    def partition_name(self) -> str:
        """Hive's partition name ``k1=v1/k2=v2`` (escaped), empty for databases and tables."""
        start = self._table_depth
        return "/".join(self.components[start : start + len(self.partition)])

    @property
    def name(self) -> str:
        """Display name: ``db``, ``db@t``, ``db@t@k1=v1/k2=v2``; ``ice.db.``, ``ice.db.t``,
        ``ice.db.t@k=v`` in a catalog scope (the scope and table joined as Spark writes them)."""
        comps = self.components
        depth = self._table_depth
        if is_scope(self.database):
            head = "".join(comps[:depth])
        else:
            head = "@".join(comps[:depth])
        return head if len(comps) <= depth else f"{head}@{'/'.join(comps[depth:])}"

    @cached_property
    def sort_key(self) -> str:
        """The global acquisition order: path components, so parents sort before children.

        Joined by NUL, which no escaped component holds, so one string comparison orders two
        objects exactly as their components' tuples would (a lock set sorts thousands)."""
        return "\x00".join(self.components)

    # -- hierarchy ----------------------------------------------------------------------------
    @cached_property  # lock sets walk up from every object: a wide read asks it thousands of times
    def parent(self) -> LockObject | None:
        if self.facet is not None:
            return _interned(self.database, self.table, ())
        if self.partition:
            return _interned(self.database, self.table, self.partition[:-1])
        if self.table is not None:
            return _interned(self.database, None, ())
        if is_scope(self.database) and self.database.count(SCOPE_END) > 1:
            # a namespace's parent: the namespace above it, up to the catalog
            above = self.database[: -len(SCOPE_END)].rpartition(SCOPE_END)[0]
            return _interned(above + SCOPE_END, None, ())
        return None

    def ancestors(self) -> list[LockObject]:
        """Every proper ancestor, nearest last: db, table, partition prefixes."""
        out: list[LockObject] = []
        node = self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        out.reverse()
        return out

    def is_ancestor_of(self, other: LockObject) -> bool:
        mine, theirs = self.components, other.components
        return len(mine) < len(theirs) and theirs[: len(mine)] == mine

    def __str__(self) -> str:
        return self.name

    # -- identity -----------------------------------------------------------------------------
    # Lock sets, the embedded manager and the write epochs key dicts by objects, thousands per wide
    # statement: the hash is computed once per object (the generated one hashed every field, the
    # partition's pairs included, each time), equality looks at identity and the hash first.
    def __hash__(self) -> int:
        try:
            return self._hash  # an instance attribute: ~3x quicker than asking __dict__
        except AttributeError:
            cached = hash((self.database, self.table, self.partition, self.facet))
            self.__dict__["_hash"] = cached
            return cached

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return hash(self) == hash(other) and (
            self.database,
            self.table,
            self.partition,
            self.facet,
        ) == (other.database, other.table, other.partition, other.facet)  # type: ignore[attr-defined]

    def __getstate__(self) -> dict:
        """Pickled without the cached hash (string hashes differ between processes)."""
        state = dict(self.__dict__)
        state.pop("_hash", None)
        state.pop("parent", None)  # cached: made again on first use
        state.pop("sort_key", None)
        return state


@lru_cache(maxsize=8192)
def _interned(
    database: str, table: str | None, partition: tuple[tuple[str, str | None], ...]
) -> LockObject:
    """Parents (databases, tables, prefixes) are shared by many objects: make each once."""
    return LockObject(database, table, partition)
