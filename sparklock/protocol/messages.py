"""The callback's answers and the lock-statement request, typed once on this side.

The JVM reads and writes the same shapes as Java records with Jackson
(``jvm-shim/.../Messages.java``); a Spark test checks that both name the same fields (the JSON
name of a field is the camelCase of its Python name). The facts (``acquire``/``explain``'s
argument) are :mod:`sparklock.rules.facts`' business.

The JVM owns the SHOW LOCKS schema: a request names the ``columns`` to answer, and
:data:`LOCK_COLUMNS` says what each name shows of a lock (the CLI prints all of them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

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
    code), which the JVM throws verbatim."""

    ok: bool = True
    error: str | None = None


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
    ``lease_until_ns``: the ZooKeeper session the locks belong to and until when
    (``time.monotonic_ns()``) they are certainly held: the JVM fences the statement on its own
    once that passes (None: locks that cannot lapse)."""

    ok: bool = True
    error: str | None = None
    handle: str = ""
    refresh_listing: bool = True
    lock_count: int | None = None
    waited_ns: int | None = None
    read_epochs: ReadEpochs | None = None
    lease_epoch: int | None = None
    lease_until_ns: int | None = None


@dataclass(frozen=True)
class Rows:
    """``command``'s and ``explain``'s answer: rows of strings in ``columns`` order (empty
    ``columns``: in the order the statement shows them, ``name, mode`` for EXPLAIN LOCKS)."""

    ok: bool = True
    error: str | None = None
    columns: list[str] = field(default_factory=list)
    rows: list[list[str | None]] = field(default_factory=list)


def refused(error: str) -> Done:
    """The answer of a call that failed (any method)."""
    return Done(ok=False, error=error)


# -- the lock-statement request (JVM → Python) ----------------------------------------------------
@dataclass(frozen=True)
class LockTarget:
    """What a lock statement names, resolved by the JVM: a database (``table`` None), a table, or a
    partition (``partition``: leading (column, value) pairs in the table's column order)."""

    database: str
    table: str | None = None
    partition: list[tuple[str, str | None]] | None = None

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> LockTarget:
        pairs = d.get("partition")
        return cls(
            d["database"], d.get("table"), None if pairs is None else [tuple(p) for p in pairs]
        )

    def lock_object(self) -> LockObject:
        if self.table is None:
            return LockObject.of_database(self.database)
        return LockObject.of_partition(self.database, self.table, self.partition or [])


@dataclass(frozen=True)
class CommandRequest:
    """SHOW LOCKS / LOCK / UNLOCK, and a server's CANCEL_WAITS / SESSION_CLOSED (BRIDGE.md
    "Command requests"). ``columns``: SHOW LOCKS's columns to answer; ``job_group``/``job_tags``:
    what a cancellation of a LOCK wait matches (CANCEL_WAITS: the waits to end); ``user`` /
    ``client_address``: who asks (a server session's, else the Spark user); ``reason`` /
    ``server_session``: why a server ends waits, and which of its sessions closed; ``agent``:
    the LOCK's server session or Spark application (as the facts' ``agent``)."""

    statement: str
    session: str = ""
    conf: Mapping[str, str] = field(default_factory=dict)
    columns: list[str] | None = None
    object: LockTarget | None = None
    mode: str | None = None
    sql: str | None = None
    job_group: str | None = None
    job_tags: list[str] | None = None
    user: str | None = None
    client_address: str | None = None
    reason: str | None = None
    server_session: str | None = None
    agent: str | None = None

    @classmethod
    def from_wire(cls, wire: str | Mapping[str, Any]) -> CommandRequest:
        """The request of JSON text (or an already decoded object); absent or null → default."""
        d = json.loads(wire) if isinstance(wire, str) else wire
        target = d.get("object")
        return cls(
            statement=str(d.get("statement")),
            session=str(d.get("session") or ""),
            conf=dict(d.get("conf") or {}),
            columns=d.get("columns"),
            object=LockTarget.from_wire(target) if target else None,
            mode=d.get("mode"),
            sql=d.get("sql"),
            job_group=d.get("jobGroup"),
            job_tags=d.get("jobTags"),
            user=d.get("user"),
            client_address=d.get("clientAddress"),
            reason=d.get("reason"),
            server_session=d.get("serverSession"),
            agent=d.get("agent"),
        )


# -- SHOW LOCKS rows -----------------------------------------------------------------------------
#: What each SHOW LOCKS column shows of a lock (``lock_time``, ``acquired_at``, ``wait_since``:
#: epoch milliseconds as text, empty when there is none; see sparklock.locks.waiting).
LOCK_COLUMNS: Mapping[str, Callable[[LockInfo], str]] = {
    "name": lambda i: i.name,
    "mode": lambda i: i.mode.value,
    "query_id": lambda i: i.data.query_id,
    "lock_time": lambda i: str(i.data.lock_time_ms),
    "lock_type": lambda i: i.data.lock_type.value,
    "query_string": lambda i: i.data.query_string,
    "client": lambda i: i.data.client,
    "user": lambda i: i.data.user,
    "state": lambda i: i.state.value,
    "blocked_by": lambda i: BLOCKER_SEPARATOR.join(i.blocked_by),
    "acquired_at": acquired_at,
    "wait_since": wait_since,
    "agent": lambda i: i.data.agent,
}


def lock_rows(infos: Iterable[LockInfo], columns: Sequence[str]) -> list[list[str]]:
    """One row per lock, the values of ``columns`` (an unknown column name fails: the JVM and
    :data:`LOCK_COLUMNS` must agree)."""
    unknown = [c for c in columns if c not in LOCK_COLUMNS]
    if unknown:
        raise ValueError(
            f"SHOW LOCKS asks for unknown columns {unknown} (sparklock/protocol/messages.py)"
        )
    return [[LOCK_COLUMNS[c](info) for c in columns] for info in infos]
