"""The lock model: modes, requests, lock sets, lock data and the grant rule.

Pure Python and shared by every manager, so the embedded and the ZooKeeper manager cannot drift
apart on what is compatible, what order locks are taken in, or who blocks whom.
"""

from __future__ import annotations

import operator
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from .objects import LockObject


class LockMode(str, Enum):
    SHARED = "SHARED"
    EXCLUSIVE = "EXCLUSIVE"

    @classmethod
    def parse(cls, text: str) -> LockMode:
        try:
            return cls(text.strip().upper())
        except ValueError:
            raise ValueError(f"lock mode must be SHARED or EXCLUSIVE, got {text!r}") from None


def compatible(a: LockMode, b: LockMode) -> bool:
    """Only SHARED/SHARED is compatible."""
    return a is LockMode.SHARED and b is LockMode.SHARED


class LockType(str, Enum):
    """Hive's lockMode field in the node data: statement locks vs ``LOCK TABLE`` locks."""

    IMPLICIT = "IMPLICIT"
    EXPLICIT = "EXPLICIT"


class LockState(str, Enum):
    """SHOW LOCKS' ``state``: a lock granted, or a request waiting in line / between retries."""

    ACQUIRED = "ACQUIRED"
    WAITING = "WAITING"


class WaitPolicy(str, Enum):
    RETRY = "retry"  # Hive's: release all, sleep, retry the whole set
    QUEUE = "queue"  # fair: keep the place in line, wait on the one conflicting node ahead


class Owner(str):
    """Who a lock set is for (the Spark session), plus lock ids that count as its own.

    ``own_locks`` are the locks of enclosing executions of the same statement (saveAsTable runs a
    CTAS that runs an insert): a nested execution must never wait for its own parent's locks.
    """

    own_locks: frozenset[str]

    def __new__(cls, name: str, own_locks: frozenset[str] = frozenset()) -> Owner:
        obj = super().__new__(cls, name)
        obj.own_locks = frozenset(own_locks)
        return obj


def owns(owner: str, lock_id: str) -> bool:
    """True if ``lock_id`` is one of the enclosing-statement locks ``owner`` carries."""
    return lock_id in getattr(owner, "own_locks", ())


@dataclass(frozen=True)
class LockRequest:
    obj: LockObject
    mode: LockMode

    @property
    def name(self) -> str:
        return self.obj.name


def build_lock_set(requests: Iterable[LockRequest]) -> list[LockRequest]:
    """A statement's lock set: deduplicated (EXCLUSIVE wins), SHARED on every ancestor added,
    sorted in the global order. Built once, by the service; a manager takes it as it is."""
    # One entry per object: the request itself when it decides the mode, so a wide read's
    # thousands of (cached) partition requests are kept as they are, never made again.
    chosen: dict[LockObject, LockRequest] = {}
    exclusive = LockMode.EXCLUSIVE
    last_parent = None  # the parent whose ancestors are known to be in the set
    for req in requests:
        obj = req.obj
        have = chosen.get(obj)
        if have is None or (req.mode is exclusive and have.mode is not exclusive):
            chosen[obj] = req
        node = obj.parent
        if node is last_parent:  # a wide read: the same table, partition after partition
            continue
        last_parent = node
        # Up to the first ancestor already in the set: its own ancestors are too (every
        # object added gets them), and SHARED changes nothing on an object already there.
        while node is not None and node not in chosen:
            chosen[node] = LockRequest(node, LockMode.SHARED)
            node = node.parent
    return sorted(chosen.values(), key=_ORDER)


def exact_lock_set(requests: Iterable[LockRequest]) -> list[LockRequest]:
    """Exactly the objects named (explicit ``LOCK TABLE``: Hive locks that object and nothing
    above it), deduplicated (EXCLUSIVE wins) and sorted in the global order."""
    chosen: dict[LockObject, LockRequest] = {}
    for req in requests:
        have = chosen.get(req.obj)
        if have is None or (req.mode is LockMode.EXCLUSIVE and have.mode is not LockMode.EXCLUSIVE):
            chosen[req.obj] = req
    return sorted(chosen.values(), key=_ORDER)


#: The global acquisition order (``LockObject.sort_key``: its path components, so parents sort
#: before children), read from the object's cache without a Python call per object.
_ORDER = operator.attrgetter("obj.sort_key")


# Query text kept in lock data by default (ZooKeeper node data is limited to 1 MB; Hive's
# hive.lock.query.string.max.length does the same): spark.sparklock.lock.queryString.maxLength.
MAX_QUERY_LENGTH = 10_000


def _strip(value: object) -> str:
    return str(value if value is not None else "").replace(":", "")


#: Marks the optional field of the node data naming the user (Hive reads five and ignores more).
USER_FIELD_PREFIX = "u="
#: Further optional ``k=v`` fields after Hive's five, all ignored by Hive: the agent (Spark app
#: id or server session; before the user), since when the request waited, when a waited request
#: was granted (sparklock.locks.waiting; a lock granted without waiting carries neither time).
AGENT_FIELD_PREFIX = "g="
WAIT_SINCE_FIELD_PREFIX = "w="
ACQUIRED_FIELD_PREFIX = "a="
#: The owning session (sparklock's lock owner): lets another driver name this lock's holder in
#: its wait-for graph, and tells a lock of this version (whose agent registers its presence)
#: from older data. ``s``, not ``o``: a waiting marker appends ``o=`` for its object.
OWNER_FIELD_PREFIX = "s="
#: ``p=1``: the agent had registered its presence when this lock was taken, so a missing
#: presence node means its owner is gone (without it the owner's life cannot be told).
PRESENCE_FIELD_PREFIX = "p="
_EXTRA_FIELD = re.compile(r"^[a-z]=")


def split_extra_fields(parts: list[str]) -> dict[str, str]:
    """Pop the trailing ``k=v`` fields (after Hive's five) off ``parts``; ``{k: v}``."""
    extras: dict[str, str] = {}
    while len(parts) > 5 and _EXTRA_FIELD.match(parts[-1]):
        key, _, value = parts.pop().partition("=")
        extras.setdefault(key, value)
    return extras


def _millis(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


@dataclass(frozen=True)
class LockData:
    """Hive's node data ``queryId:lockTime:IMPLICIT|EXPLICIT:queryStr:clientIp``, plus
    ``:u=<user>`` when the user is known and ``:g=<agent>``, ``:w=<ms>``, ``:a=<ms>``,
    ``:s=<owner>``, ``:p=1`` (agent, waiting since, granted at, owning session, presence
    registered: see :data:`AGENT_FIELD_PREFIX`) -- fields Hive's parser ignores."""

    query_id: str
    lock_time_ms: int
    lock_type: LockType
    query_string: str = ""
    client: str = ""
    user: str = ""
    agent: str = ""
    wait_since_ms: int = 0
    acquired_ms: int = 0
    owner: str = ""
    presence: bool = False

    @classmethod
    def now(
        cls,
        query_id: str,
        lock_type: LockType,
        query_string: str = "",
        client: str = "",
        max_query_length: int = MAX_QUERY_LENGTH,
        user: str = "",
        agent: str = "",
        owner: str = "",
    ) -> LockData:
        """Lock data as stored: ``:`` stripped, whitespace folded, query abbreviated."""
        query = _strip(" ".join(query_string.split()))[:max_query_length]
        return cls(
            _strip(query_id),
            int(time.time() * 1000),
            lock_type,
            query,
            _strip(client),
            _strip(user),
            _strip(agent),
            owner=_strip(owner),
        )

    def encode(self) -> bytes:
        fields = [
            _strip(self.query_id),
            str(self.lock_time_ms),
            self.lock_type.value,
            _strip(self.query_string),
            _strip(self.client),
        ]
        if self.agent:
            fields.append(AGENT_FIELD_PREFIX + _strip(self.agent))
        if self.user:
            fields.append(USER_FIELD_PREFIX + _strip(self.user))
        if self.wait_since_ms:
            fields.append(f"{WAIT_SINCE_FIELD_PREFIX}{self.wait_since_ms}")
        if self.acquired_ms:
            fields.append(f"{ACQUIRED_FIELD_PREFIX}{self.acquired_ms}")
        if self.owner:
            fields.append(OWNER_FIELD_PREFIX + _strip(self.owner))
        if self.presence:
            fields.append(PRESENCE_FIELD_PREFIX + "1")
        return ":".join(fields).encode("utf-8")

    @classmethod
    def decode(cls, data: bytes | None) -> LockData:
        """Tolerant: a peer's malformed data still lists (with what could be read)."""
        text = (data or b"").decode("utf-8", "replace")
        parts = text.split(":")
        while len(parts) < 5:
            parts.append("")
        query_id, lock_time, lock_type, query = parts[:4]
        extras = split_extra_fields(parts)
        client = ":".join(parts[4:])
        try:
            t = int(lock_time)
        except ValueError:
            t = 0
        try:
            lt = LockType(lock_type)
        except ValueError:
            lt = LockType.IMPLICIT
        return cls(
            query_id,
            t,
            lt,
            query,
            client,
            extras.get(USER_FIELD_PREFIX[0], ""),
            extras.get(AGENT_FIELD_PREFIX[0], ""),
            _millis(extras.get(WAIT_SINCE_FIELD_PREFIX[0])),
            _millis(extras.get(ACQUIRED_FIELD_PREFIX[0])),
            extras.get(OWNER_FIELD_PREFIX[0], ""),
            extras.get(PRESENCE_FIELD_PREFIX[0]) == "1",
        )


@dataclass(frozen=True)
class LockInfo:
    """One lock as listed by SHOW LOCKS (EXTENDED); also names a conflict's holders."""

    obj: LockObject
    mode: LockMode
    data: LockData
    lock_id: str = ""  # manager-specific: znode path or embedded sequence
    owner: str | None = None  # known only for locks taken by this process
    # SHOW LOCKS: granted or waiting, and (waiting) what is ahead of it (sparklock.locks.waiting)
    state: LockState = LockState.ACQUIRED
    blocked_by: tuple[str, ...] = ()

    @classmethod
    def granted(
        cls, obj: LockObject, mode: LockMode, data: LockData, lock_id: str, owner: str | None
    ) -> LockInfo:
        """``LockInfo(obj, mode, data, lock_id, owner)``, made in one step instead of the frozen
        dataclass's ``object.__setattr__`` per field: a wide lock set makes thousands at once."""
        info = object.__new__(cls)
        vars(info).update(
            obj=obj,
            mode=mode,
            data=data,
            lock_id=lock_id,
            owner=owner,
            state=LockState.ACQUIRED,
            blocked_by=(),
        )
        return info

    @property
    def name(self) -> str:
        return self.obj.name

    def describe(self) -> str:
        d = self.data
        query = d.query_string if len(d.query_string) <= 120 else d.query_string[:117] + "..."
        return (
            f"{self.mode.value} {d.lock_type.value.lower()} lock on {self.name} "
            f"(query_id={d.query_id or '?'}, user={d.user or '?'}, client={d.client or '?'}, "
            f"query={query!r})"
        )


def listing_order(info: LockInfo) -> tuple:
    """SHOW LOCKS order: by name, granted before waiting, EXCLUSIVE first, then oldest first."""
    return (
        info.obj.sort_key,
        info.state is LockState.WAITING,
        info.mode is not LockMode.EXCLUSIVE,
        info.lock_id,
    )


@dataclass(frozen=True)
class Contender:
    """One lock (held or waiting) on an object, as the grant rule sees it."""

    seq: int
    mode: LockMode
    key: str = ""  # identifies the node (znode name / embedded id)


@dataclass
class GrantDecision:
    granted: bool
    blockers: list[Contender] = field(default_factory=list)

    @property
    def nearest_blocker(self) -> Contender | None:
        return max(self.blockers, key=lambda c: c.seq) if self.blockers else None


def decide(
    mine: Contender,
    siblings: Sequence[Contender],
    is_own_explicit: Callable[[Contender], bool] = lambda c: False,
) -> GrantDecision:
    """Hive's grant rule, owner-aware.

    Hive: a request is refused when a lower-sequence sibling conflicts (an EXCLUSIVE one, or any
    one for an EXCLUSIVE request). Owner-aware: the requester's own explicit locks do not count, nor
    do siblings that can only be waiting behind one of them (they conflict with that explicit lock,
    directly or through another such waiter), so a session's LOCK TABLE never blocks its own
    statements and never deadlocks them against a queued third party.
    """
    ordered = sorted((c for c in siblings if c.key != mine.key), key=lambda c: c.seq)
    stuck: list[Contender] = []  # own explicit locks and everything queued behind them
    blockers: list[Contender] = []
    for c in ordered:
        if c.seq >= mine.seq:
            break
        if is_own_explicit(c):
            stuck.append(c)
            continue
        if any(not compatible(c.mode, s.mode) for s in stuck):
            stuck.append(c)
            continue
        if not compatible(c.mode, mine.mode):
            blockers.append(c)
    return GrantDecision(not blockers, blockers)


@dataclass(frozen=True)
class LockSettings:
    """How one acquisition waits; may differ per session (spark.conf.set)."""

    num_retries: int = 100
    retry_interval: float = 1.0
    wait_policy: WaitPolicy = WaitPolicy.QUEUE
    unlock_num_retries: int = 10
    #: a statement that has waited this long logs a WARN line naming the holders, and again
    #: after each further such period (0: never)
    wait_warn_interval: float = 10.0

    @property
    def budget(self) -> float:
        """Total time a statement may wait: attempts x interval (both policies)."""
        return self.num_retries * self.retry_interval
