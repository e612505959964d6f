"""What a failure is, as it crosses the bridge: its condition, SQLSTATE and parameters.

Every sparklock error has a *condition* (``LOCK_CONFLICT``, ...) and an SQLSTATE, the way Spark's
own errors do, so that PySpark code branches on ``getCondition()`` and JDBC/ODBC clients of a
Thrift server on ``SQLException.getSQLState()``. The list is typed once per language:
:class:`Condition` here, ``ErrorCondition.java`` in the shim (a Spark test checks they are equal).
A refusal's answer carries a :class:`Failure` (condition and message parameters); the JVM keeps it
on its ``SparkLockException`` (a ``SparkThrowable``) and PySpark's error conversion turns it back
into sparklock's Python class (:mod:`sparklock.spark.exceptions`).

This module imports nothing of sparklock: :mod:`sparklock.errors` builds on it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Condition(Enum):
    """A sparklock error condition: its SQLSTATE and what it means (docs/errors.md).

    SQLSTATE classes follow the SQL standard where one fits (``08`` connection, ``22`` data,
    ``40`` transaction, ``42`` syntax or access, ``55`` object state, ``57`` operator
    intervention, ``58`` system) and PostgreSQL's subclasses that JDBC tools already know
    (``55P03`` lock not available, ``40P01`` deadlock detected, ``57014`` query cancelled,
    ``42501`` insufficient privilege).
    """

    LOCK_CONFLICT = ("55P03", "a lock could not be acquired within the wait budget")
    LOCK_DEADLOCK = ("40P01", "the statement was chosen to break a deadlock between lock owners")
    LOCK_WAIT_CANCELLED = ("57014", "the statement was cancelled while waiting for locks")
    LOCKS_LOST = ("40003", "a statement's locks were lost while it ran (outcome unknown)")
    INVALID_CONFIG = (
        "22022",
        "a `spark.sparklock.*` value that cannot be used, or a runtime change of a Spark setting "
        "the lease checks rely on (`spark.sql.sources.commitProtocolClass`)",
    )
    LOCK_MANAGER_UNAVAILABLE = ("08001", "the lock manager (ZooKeeper, metastore) is unreachable")
    NOT_LOCKED = ("55000", "UNLOCK of an object that holds no lock")
    UNLOCK_NOT_OWNER = ("42501", "UNLOCK of another user's locks under `unlock.policy=owner`")
    UNLOCK_FAILED = ("58000", "locks could not be released after every retry")
    INVALID_LOCK_OBJECT = ("42602", "a name that cannot name a lock object")
    SPARKLOCK_NOT_ATTACHED = ("55000", "the extension runs but no Python lock service is attached")
    SPARKLOCK_SETUP_FAILED = ("55000", "sparklock cannot be installed into this session")
    SHIM_BUILD_FAILED = ("58000", "the shim jar can be neither found nor built")
    UNSUPPORTED_STATEMENT = ("0A000", "a lock statement the service does not know")
    LOCK_SERVICE_UNREACHABLE = ("08006", "the JVM cannot call the Python lock service")
    LOCK_SERVICE_PROTOCOL = ("XX000", "the JVM and Python disagree on a message (a bug)")
    LOCK_SERVICE_ERROR = ("XX000", "the Python lock service failed unexpectedly (a bug)")
    LOCK_FACTS_FAILED = ("XX000", "the statement's facts could not be extracted (a bug)")
    SPARKLOCK_ERROR = ("XX000", "any other sparklock failure")

    @property
    def sql_state(self) -> str:
        return self.value[0]

    @property
    def meaning(self) -> str:
        return self.value[1]

    @classmethod
    def of(cls, code: str | None) -> Condition:
        """The condition named ``code``; an unknown name is ``SPARKLOCK_ERROR``."""
        return cls.__members__.get(str(code), cls.SPARKLOCK_ERROR)


@dataclass(frozen=True)
class Holder:
    """One lock that refused a statement, as ``LockConflictError.holders`` lists it: the lock's
    ``mode`` (SHARED/EXCLUSIVE) and ``object`` (``db@table@k=v``), ``lock_type`` (IMPLICIT for a
    statement's, EXPLICIT for LOCK TABLE's), who holds it (``query_id``, ``user``, ``client``
    address), ``since`` (epoch milliseconds it was taken) and the holder's ``query`` text."""

    mode: str
    object: str
    lock_type: str = ""
    query_id: str = ""
    user: str = ""
    client: str = ""
    since: int = 0
    query: str = ""

    @classmethod
    def of(cls, info: Any) -> Holder:
        """The holder of a :class:`~sparklock.locks.model.LockInfo` (or a Holder, as is)."""
        if isinstance(info, Holder):
            return info
        d = info.data
        return cls(
            mode=info.mode.value,
            object=info.name,
            lock_type=d.lock_type.value,
            query_id=d.query_id,
            user=d.user,
            client=d.client,
            since=d.acquired_ms or d.lock_time_ms,
            query=d.query_string,
        )

    @classmethod
    def from_wire(cls, d: Mapping[str, Any]) -> Holder:
        known = {f: d[f] for f in cls.__dataclass_fields__ if f in d}
        return cls(**known)


def holders_parameter(holders: list[Holder]) -> str:
    """The ``holders`` message parameter: a JSON array of :class:`Holder` objects (message
    parameters are text, in Spark as here)."""
    return json.dumps([asdict(h) for h in holders], separators=(",", ":"))


def holders_of(parameter: str | None) -> list[Holder]:
    """The holders of a ``holders`` message parameter (none when absent or unreadable)."""
    try:
        return [Holder.from_wire(h) for h in json.loads(parameter or "[]")]
    except (ValueError, TypeError):
        return []


@dataclass(frozen=True)
class Failure:
    """A refusal's condition and message parameters (``Messages.Failure`` in the JVM)."""

    condition: str
    parameters: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, wire: str | Mapping[str, Any] | None) -> Failure | None:
        if not wire:
            return None
        d = json.loads(wire) if isinstance(wire, str) else wire
        params = d.get("parameters") or {}
        return cls(str(d.get("condition")), {str(k): str(v) for k, v in params.items()})
