"""sparklock's lock model on the metastore's: lock sets to ``LockComponent`` lists, SHOW LOCKS rows
back to :class:`LockInfo`, and which of a set's requests a blocking lock refuses.

The metastore's grant rule is hierarchical by itself (``TxnHandler.checkLock``): a component on
a table meets every lock on that table's partitions, a database component every lock below it,
except that a database-level ``SHARED_READ`` meets nothing below the database. So:

* SHARED → ``SHARED_READ`` and EXCLUSIVE → ``EXCLUSIVE``, as Hive's ``DbTxnManager`` locks a
  non-transactional table (strict locking mode: reads ``SHARED_READ``, INSERT and INSERT
  OVERWRITE ``EXCLUSIVE``). Spark never writes Hive ACID tables, so it never asks for Hive 4's
  ``SHARED_WRITE`` / ``EXCL_WRITE``: those are ACID writers' locks, which ACID readers do not
  wait for (they read a snapshot); a Spark write under one would let Hive's readers see half
  written files.
* The SHARED ancestors the model adds to an implicit set are sent only at database level (a
  database ``SHARED_READ`` is exactly the model's: it stops DROP DATABASE and nothing below). A
  table's SHARED ancestor of a partition lock is not sent: the metastore would make it meet
  every other partition's EXCLUSIVE (writers of different partitions would queue), and the
  partition's own component already meets a table EXCLUSIVE.
* A table facet (e.g. the writers' facet every Spark write to a table takes) is a
  partition-level component named ``_sparklock_facet=<facet>``: the metastore parses every
  partition-level name as ``k=v/...`` (Hive 4 fails the whole ``lock`` call otherwise), and no
  real partition has a column of that reserved name.
* An object of another catalog (a v2 catalog that is not this metastore: JDBC, Iceberg on a
  Hadoop or REST catalog, ...) is kept under a reserved database name, its scope as sparklock
  names it (``jdb.x.`` for the namespace ``x`` of catalog ``jdb``, the table ``t`` below it as
  ``jdb.x.`` / ``t``): the metastore accepts any database name in a lock request and checks
  none exists, a ``.`` is in no Hive database name, and one database per scope keeps the
  catalog → namespace → table hierarchy (each scope's SHARED ancestor is a database-level
  component, which the metastore always sends).
* A catalog whose tables *are* this metastore's (an Iceberg ``HiveCatalog`` on it, see
  :mod:`.catalogs`) locks the metastore's own objects: ``ice.db.t`` is sent as the table ``t`` of
  database ``db``, its namespace ``ice.db.`` as the database ``db``, exactly what Hive's lock
  client locks for that table (:func:`hive_object`). Only the catalog as a whole keeps its
  reserved name (the metastore has no object for "every database"). Rows read back are named as
  the statement or the user named them where that is known (:func:`as_named`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...locks.model import LockData, LockInfo, LockMode, LockRequest, LockState
from ...locks.objects import (
    FACET_PREFIX,
    LockObject,
    ObjectKind,
    catalog_scope,
    escape_path_name,
    is_scope,
    unescape_path_name,
)
from . import agent_info, wire

S, X = LockMode.SHARED, LockMode.EXCLUSIVE
_TYPE_OF_MODE = {S: wire.SHARED_READ, X: wire.EXCLUSIVE}
# Hive's ACID writers' locks are listed with the mode they exclude like: SHARED_WRITE admits
# other readers and writers (SHARED), EXCL_WRITE admits readers only (EXCLUSIVE for writers).
_MODE_OF_TYPE = {wire.SHARED_READ: S, wire.SHARED_WRITE: S, wire.EXCLUSIVE: X, wire.EXCL_WRITE: X}
#: The partition key a facet's component is named with (``_sparklock_facet=writers``).
FACET_KEY = FACET_PREFIX + "facet"


def sent_requests(lock_set: Sequence[LockRequest]) -> list[LockRequest]:
    """The requests of ``lock_set`` the metastore is asked for: all but the SHARED ancestors
    below database level that another request of the set lies under (see the module doc)."""
    above = {a for r in lock_set for a in r.obj.ancestors()}  # a wide set: one walk per object
    db = ObjectKind.DATABASE
    return [r for r in lock_set if r.mode is X or r.obj.kind is db or r.obj not in above]


def covered(request: LockRequest, own: Iterable[tuple[LockObject, LockMode]]) -> bool:
    """Whether a lock the owner already holds (its LOCK TABLE, or its enclosing execution's)
    keeps everybody else off ``request``: on the same object or above it, EXCLUSIVE, or SHARED
    for a SHARED request. Such a request is not sent; the metastore knows no owners and would
    queue it behind its own owner's lock."""
    for obj, mode in own:
        if (obj == request.obj or obj.is_ancestor_of(request.obj)) and (
            mode is X or request.mode is S
        ):
            return True
    return False


def hive_object(obj: LockObject, catalogs: frozenset[str]) -> LockObject:
    """``obj`` as the metastore keeps it: an object of a catalog in ``catalogs`` (whose tables
    are this metastore's, one namespace level as Hive has) is the metastore's own (``ice.db.t``
    → ``db@t``); every other object is itself."""
    catalog = obj.catalog
    if catalog is None or catalog.lower() not in catalogs or len(obj.namespace) != 1:
        return obj
    return LockObject(obj.namespace[0], obj.table, obj.partition, obj.facet)


def as_named(obj: LockObject, names: Iterable[LockObject], catalogs: frozenset[str]) -> LockObject:
    """A metastore object ``obj`` as one of ``names`` (the objects a request asked for, or the
    one a listing is about) names it: at or below such an object of a catalog in ``catalogs``,
    the same place under that catalog (``db@t`` → ``ice.db.t``); otherwise itself. A catalog
    as a whole takes every metastore table (its namespaces are the metastore's databases)."""
    if not catalogs or is_scope(obj.database):
        return obj
    for name in names:
        catalog = name.catalog
        if catalog is None or catalog.lower() not in catalogs:
            continue
        whole_catalog = not name.namespace and name.table is None
        mapped = hive_object(name, catalogs)
        if whole_catalog or mapped == obj or mapped.is_ancestor_of(obj):
            scope = catalog_scope(catalog, [obj.database])
            return LockObject(scope, obj.table, obj.partition, obj.facet)
    return obj


def metastore_database(obj: LockObject) -> str:
    """The database name the metastore keeps ``obj`` under: its Hive database, or for an object
    of another catalog its scope (a reserved name, see the module doc). An object of a catalog
    whose tables are this metastore's is first made the metastore's own (:func:`hive_object`)."""
    return obj.database


def is_reserved_database(dbname: str) -> bool:
    """Whether a metastore database name is a reserved one (another catalog's scope)."""
    return is_scope(dbname)


def spans_databases(obj: LockObject) -> bool:
    """Whether the objects below ``obj`` are kept under other database names than its own (a
    catalog's or namespace's: each namespace below is a database of its own), so that listing
    them asks for every lock rather than one database's."""
    return is_reserved_database(metastore_database(obj)) and obj.table is None


def component(request: LockRequest, catalogs: frozenset[str] = frozenset()) -> object:
    """The ``LockComponent`` of one request (no transaction: ``NO_TXN``), on the metastore's
    own object for a catalog in ``catalogs`` (:func:`hive_object`)."""
    obj = hive_object(request.obj, catalogs)
    kind = obj.kind
    if kind is ObjectKind.DATABASE:
        level, table, part = wire.DB, None, None
    elif kind is ObjectKind.TABLE:
        level, table, part = wire.TABLE, obj.table, None
    elif kind is ObjectKind.FACET:  # a partition-level name no partition can have
        level, table, part = wire.PARTITION, obj.table, f"{FACET_KEY}={escape_path_name(obj.facet)}"
    else:
        level, table, part = wire.PARTITION, obj.table, obj.partition_name
    return wire.LockComponent(
        type=_TYPE_OF_MODE[request.mode],
        level=level,
        dbname=metastore_database(obj),
        tablename=table,
        partitionname=part,
        operationType=wire.NO_TXN,
        isTransactional=False,
        isDynamicPartitionWrite=False,
    )


def row_object(row: object) -> LockObject:
    """The object of a SHOW LOCKS row (Hive's names: ``db``, ``t``, ``k=v/k2=v2`` escaped)."""
    db, table, part = row.dbname, row.tablename, row.partname  # type: ignore[attr-defined]
    if not table:
        return LockObject.of_database(db)
    if not part:
        return LockObject.of_table(db, table)
    if part.startswith(FACET_KEY + "="):
        return LockObject(db, table, facet=unescape_path_name(part[len(FACET_KEY) + 1 :]))
    spec = []
    for comp in part.split("/"):
        k, _, v = comp.partition("=")
        spec.append((unescape_path_name(k), unescape_path_name(v)))
    return LockObject.of_partition(db, table, spec)


def lock_id(row: object) -> str:
    """Hive's SHOW LOCKS lock id: ``<request id>.<component id>``."""
    return f"{row.lockid}.{row.lockIdInternal or 1}"  # type: ignore[attr-defined]


def row_info(row: object, known: dict[int, tuple[LockData, str]]) -> LockInfo:
    """A SHOW LOCKS row as sparklock lists it. ``known`` has the data and owner of the requests
    this process made (query text); others show what the metastore keeps: the query id (Hive
    puts it in ``agentInfo``; sparklock's owner, type and agent follow it there, see
    :mod:`.agent_info`), user, host and times."""
    r = row
    mine = known.get(r.lockid)  # type: ignore[attr-defined]
    if mine is not None:
        data, owner = mine
    else:
        at = r.acquiredat or r.lastheartbeat or 0  # type: ignore[attr-defined]
        named = agent_info.decode(r.agentInfo)  # type: ignore[attr-defined]
        data = LockData(
            query_id=named.query_id,
            lock_time_ms=int(at),
            lock_type=named.lock_type,
            client=r.hostname or "",  # type: ignore[attr-defined]
            user=r.user or "",  # type: ignore[attr-defined]
            agent=named.agent,
            owner=named.owner,
        )
        owner = None
    waiting = r.state == wire.WAITING  # type: ignore[attr-defined]
    blocked_by = (f"lock {r.blockedByExtId}",) if waiting and r.blockedByExtId else ()  # type: ignore[attr-defined]
    return LockInfo(
        row_object(r),
        _MODE_OF_TYPE.get(r.type, X),  # type: ignore[attr-defined]
        data,
        lock_id(r),
        owner,
        LockState.WAITING if waiting else LockState.ACQUIRED,
        blocked_by,
    )


def conflicts(request: LockRequest, obj: LockObject, mode: LockMode) -> bool:
    """Whether a held (obj, mode) meets ``request`` under the metastore's rule."""
    if request.mode is S and mode is S:
        return False
    same = request.obj == obj
    if same:
        return True
    if obj.is_ancestor_of(request.obj):
        return not (obj.kind is ObjectKind.DATABASE and mode is S)
    if request.obj.is_ancestor_of(obj):
        return not (request.obj.kind is ObjectKind.DATABASE and request.mode is S)
    return False


def refused_request(lock_set: Sequence[LockRequest], blockers: Sequence[LockInfo]) -> LockRequest:
    """The request of the set a blocking lock refuses, as the other managers name it: one on
    the blocker's own object if the set has one (a table's SHARED ancestor meeting a table
    EXCLUSIVE), else the first the metastore's rule makes meet it."""
    for b in blockers:
        for r in lock_set:
            if r.obj == b.obj and conflicts(r, b.obj, b.mode):
                return r
    for b in blockers:
        for r in lock_set:
            if conflicts(r, b.obj, b.mode):
                return r
    return lock_set[0]
