"""The callback's answers and requests, one type per call, typed once on this side.

The JVM reads and writes the same shapes as Java records with Jackson
(``jvm-shim/.../Messages.java``); a Spark test checks that both name the same fields, in order
(the JSON name of a field is the camelCase of its Python name). The facts (``acquire`` /
``explain``'s argument) are :mod:`sparklock.rules.facts`' business.

The SHOW LOCKS columns are :class:`LockRow`'s fields (the JVM's ``LockRow`` record): their names
and order here, what each shows of a lock in :meth:`LockRow.of`; SHOW LOCKS EXTENDED and the CLI
show them all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, astuple, dataclass, field, fields
from typing import Any, TypeVar

from ..failures import Condition, Failure, Holder  # noqa: F401 - the bridge's failure types
from ..locks.model import LockInfo
from ..locks.objects import LockObject
from ..locks.waiting import BLOCKER_SEPARATOR, acquired_at, wait_since
from ..rules.facts import wire_name


def _wire(value: Any) -> Any:
    """Field names in camelCase, None fields left out (as the JVM writes its records)."""
    if isinstance(value, Mapping):
        return {wire_name(k): _wire(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_wire(v) for v in value]
    return value


def to_json(message: Any) -> str:
    """A message as the JSON text the JVM reads and writes."""
    return json.dumps(_wire(asdict(message)), default=str, separators=(",", ":"))


# -- answers (Python → JVM) -----------------------------------------------------------------------
@dataclass(frozen=True)
class Done:
    """``release``'s answer, and any refusal: ``ok`` false with the error text (starting with its
    code), which the JVM throws verbatim, and its ``failure`` (condition and parameters)."""

    ok: bool = True
    error: str | None = None
    failure: Failure | None = None


@dataclass(frozen=True)
class TableEpochs:
    """Write epochs of one catalog table a statement reads, ``facts.reads[read]``
    (:mod:`sparklock.service.epochs`): ``whole`` changes with any write in the table, ``base``
    with a write of the whole table (or database); partition ``partitions[indexes[i]]`` of the
    read has epoch ``epochs[i]``, every other one ``base``."""

    read: int
    whole: int
    base: int
    indexes: list[int] = field(default_factory=list)
    epochs: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class ReadEpochs:
    """What the JVM compares with the epochs under which it listed a table's files, to re-list
    only what changed since. ``clock``: the reading of the foreign-write clock the values belong
    to (None: unknown, re-list everything and remember nothing)."""

    clock: str | None = None
    tables: list[TableEpochs] = field(default_factory=list)


@dataclass(frozen=True)
class Acquired:
    """``acquire``'s answer: the handle to release ("" when nothing needed locking), whether the
    JVM re-lists the files the statement reads (``spark.sparklock.read.refreshListing``: the key
    is this side's, the JVM only reads this answer), for the JVM's metrics and listener events
    how many locks were granted and how long getting them took, and the write epochs of the
    tables read, taken after the grant (None: re-list all of them). ``lease_epoch``/
    ``lease_until_ns``: the lease the locks were granted under (a ZooKeeper session id, a
    metastore statement's negative term id) and until when
    (``time.monotonic_ns()``) they are certainly held: the JVM fences the statement on its own
    once that passes (None: locks that cannot lapse)."""

    ok: bool = True
    error: str | None = None
    failure: Failure | None = None
    handle: str = ""
    refresh_listing: bool = True
    lock_count: int | None = None
    waited_ns: int | None = None
    read_epochs: ReadEpochs | None = None
    lease_epoch: int | None = None
    lease_until_ns: int | None = None


@dataclass(frozen=True)
class LockRow:
    """One lock (or waiting request) as SHOW LOCKS shows it: the fields, in order, are the
    EXTENDED columns (new ones go last). ``lock_time``, ``acquired_at``, ``wait_since``: epoch
    milliseconds as text, empty when there is none (see :mod:`sparklock.locks.waiting`)."""

    name: str
    mode: str
    query_id: str
    lock_time: str
    lock_type: str
    query_string: str
    client: str
    user: str
    state: str
    blocked_by: str
    acquired_at: str
    wait_since: str
    agent: str
    alive: str

    @classmethod
    def of(cls, info: LockInfo, alive: bool | None = None) -> LockRow:
        """What each column shows of a lock; ``alive``: whether its owner still lives
        (``LockManager.owners_alive``: true, false, or unknown)."""
        return cls(
            name=info.name,
            mode=info.mode.value,
            query_id=info.data.query_id,
            lock_time=str(info.data.lock_time_ms),
            lock_type=info.data.lock_type.value,
            query_string=info.data.query_string,
            client=info.data.client,
            user=info.data.user,
            state=info.state.value,
            blocked_by=BLOCKER_SEPARATOR.join(info.blocked_by),
            acquired_at=acquired_at(info),
            wait_since=wait_since(info),
            agent=info.data.agent,
            alive="unknown" if alive is None else str(alive).lower(),
        )


@dataclass(frozen=True)
class Locks:
    """``showLocks``'s answer: the locks asked for, whatever columns the statement shows."""

    ok: bool = True
    error: str | None = None
    failure: Failure | None = None
    locks: list[LockRow] = field(default_factory=list)


@dataclass(frozen=True)
class PlannedLock:
    """One lock EXPLAIN LOCKS shows: its fields are the statement's columns."""

    name: str
    mode: str


@dataclass(frozen=True)
class Explained:
    """``explain``'s answer: the locks a statement would take, in acquisition order."""

    ok: bool = True
    error: str | None = None
    failure: Failure | None = None
    locks: list[PlannedLock] = field(default_factory=list)


def refused(error: str, failure: Failure) -> Done:
    """The answer of a call that failed (any method)."""
    return Done(ok=False, error=error, failure=failure)


# -- the lock-statement request (JVM → Python) ----------------------------------------------------
@dataclass(frozen=True)
class LockTarget:
    """What a lock statement names, resolved by the JVM: a database (``table`` None), a table, or a
    partition (``partition``: leading (column, value) pairs in the table's column order).

    An object of another catalog has its ``catalog`` and ``namespace`` parts (a namespace when
    ``table`` is None); ``database`` then only shows the namespace."""

    database: str
    table: str | None = None
    partition: list[tuple[str, str | None]] | None = None
    catalog: str | None = None
    namespace: list[str] | None = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> LockTarget:
        pairs = d.get("partition")
        namespace = d.get("namespace")
        return cls(
            d["database"],
            d.get("table"),
            None if pairs is None else [tuple(p) for p in pairs],
            d.get("catalog"),
            None if namespace is None else list(namespace),
        )

    def lock_object(self) -> LockObject:
        if self.catalog is not None:
            namespace = self.namespace or []
            if self.table is None:
                return LockObject.of_namespace(self.catalog, namespace)
            table = LockObject.of_catalog_table(self.catalog, namespace, self.table)
            return LockObject.of_partition(table.database, self.table, self.partition or [])
        if self.table is None:
            return LockObject.of_database(self.database)
        return LockObject.of_partition(self.database, self.table, self.partition or [])


@dataclass(frozen=True)
class ShowLocksRequest:
    """SHOW LOCKS [object]: the locks on ``object`` and below (None: every lock)."""

    session: str = ""
    conf: Mapping[str, str] = field(default_factory=dict)
    object: LockTarget | None = None


@dataclass(frozen=True)
class ExplicitLockRequest:
    """LOCK TABLE / DATABASE. ``job_group``/``job_tags``: what a cancellation of its wait matches;
    ``user``/``client_address``/``agent``: who locks (as the facts name them: a server session's
    user and client, else the Spark user; the server session or Spark application)."""

    session: str = ""
    conf: Mapping[str, str] = field(default_factory=dict)
    object: LockTarget | None = None
    mode: str | None = None
    sql: str | None = None
    job_group: str | None = None
    job_tags: list[str] | None = None
    user: str | None = None
    client_address: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class UnlockRequest:
    """UNLOCK TABLE / DATABASE, and who asks (``spark.sparklock.unlock.policy`` decides)."""

    session: str = ""
    conf: Mapping[str, str] = field(default_factory=dict)
    object: LockTarget | None = None
    user: str | None = None
    client_address: str | None = None
    agent: str | None = None


@dataclass(frozen=True)
class CancelWaitsRequest:
    """A server's statement thread was interrupted while it waited for locks: end the waits of
    ``job_group``, else of the Connect operation tags among ``job_tags``."""

    job_group: str | None = None
    job_tags: list[str] | None = None
    reason: str | None = None


@dataclass(frozen=True)
class SessionClosedRequest:
    """A server session ended (``server_session``: ``thrift:<id>`` / ``connect:<id>``): end the
    waits of its Spark ``session`` and apply ``explicit.onSessionClose`` to its LOCK TABLE
    locks."""

    session: str = ""
    server_session: str | None = None


Request = TypeVar("Request")


def read_request(cls: type[Request], wire: str | Mapping[str, Any]) -> Request:
    """A request of JSON text (or an already decoded object): each field read by its camelCase
    name, absent or null → its default, ``object`` as a :class:`LockTarget`."""
    d = json.loads(wire) if isinstance(wire, str) else wire
    values: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        value = d.get(wire_name(f.name))
        if value is None:
            continue
        if f.name == "object":
            value = LockTarget.from_wire(value)
        values[f.name] = value
    return cls(**values)


# -- SHOW LOCKS rows -----------------------------------------------------------------------------
#: The SHOW LOCKS EXTENDED columns, in order (the CLI prints all of them).
LOCK_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(LockRow))


def lock_rows(
    infos: Sequence[LockInfo], columns: Sequence[str], alive: Sequence[bool | None] = ()
) -> list[list[str]]:
    """One row per lock, the values of ``columns`` (an unknown column name fails); ``alive``:
    per lock, whether its owner lives (unknown when not given)."""
    unknown = [c for c in columns if c not in LOCK_COLUMNS]
    if unknown:
        raise ValueError(f"SHOW LOCKS has no columns {unknown}; it has {list(LOCK_COLUMNS)}")
    index = [LOCK_COLUMNS.index(c) for c in columns]
    lives = list(alive) or [None] * len(infos)
    rows = [astuple(LockRow.of(info, a)) for info, a in zip(infos, lives, strict=True)]
    return [[row[i] for i in index] for row in rows]
