"""``spark.sparklock.*`` configuration: parsing, defaults, validation.

Usable without Spark (a plain mapping of key → string), so the managers and the command-line tool
share exactly the parser the Spark bridge uses. Values follow Spark's conventions: durations such as
``100ms``, ``4s``, ``2min``; booleans ``true``/``false``. A bad value raises :class:`ConfigError`
naming the key and what it accepts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .config_keys import KEYS
from .errors import ConfigError
from .model import WaitPolicy
from .zksecurity import ZooKeeperSecurity, parse_security

PREFIX = "spark.sparklock."

_DURATION_UNITS = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")
DURATION_ACCEPTS = "a duration such as 100ms, 4s, 2min (units us, ms, s, m, min, h, d; bare = ms)"


def parse_duration(key: str, value: str | float | int) -> float:
    """Seconds from a Spark-style duration; a bare number means milliseconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value) / 1000.0
    else:
        m = _DURATION_RE.match(str(value).lower())
        if not m or m.group(2) not in ("", *_DURATION_UNITS):
            raise ConfigError(key, value, DURATION_ACCEPTS)
        unit = _DURATION_UNITS.get(m.group(2), 1e-3)
        seconds = float(m.group(1)) * unit
    return seconds


def format_duration(seconds: float) -> str:
    ms = round(seconds * 1000)
    if ms % 60000 == 0 and ms:
        return f"{ms // 60000}min"
    if ms % 1000 == 0 and ms:
        return f"{ms // 1000}s"
    return f"{ms}ms"


def parse_bool(key: str, value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise ConfigError(key, value, "true or false")


def parse_int(key: str, value: str | int, minimum: int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = None
    if number is None or number < minimum:
        raise ConfigError(key, value, f"an integer >= {minimum}")
    return number


def parse_choice(key: str, value: str, choices: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in choices:
        raise ConfigError(key, value, " or ".join(choices))
    return text


DEFAULTS = {k.key: k.default for k in KEYS}

#: Keys a session must not change for itself (the JVM registers them as static SQL confs, so
#: ``SET``/``spark.conf.set`` of them fails): who may UNLOCK is the application's decision, not
#: the asking session's.
APPLICATION_WIDE_KEYS = ("spark.sparklock.unlock.policy", "spark.sparklock.admins")

#: Query text kept in lock data at most (characters): four UTF-8 bytes each stay well below
#: ZooKeeper's 1 MB node limit (jute.maxbuffer).
QUERY_STRING_MAX_LENGTH_LIMIT = 200_000


@dataclass(frozen=True)
class LockSettings:
    """How one acquisition waits; may differ per session (spark.conf.set)."""

    num_retries: int = 100
    retry_interval: float = 1.0
    wait_policy: WaitPolicy = WaitPolicy.QUEUE
    unlock_num_retries: int = 10

    @property
    def budget(self) -> float:
        """Total time a statement may wait: attempts x interval (both policies)."""
        return self.num_retries * self.retry_interval


@dataclass(frozen=True)
class Escalation:
    """Lock escalation (opt-in): fewer, coarser locks for statements touching many partitions.

    ``partitions`` is the threshold (0 = off): beyond it, a table's partition locks of one
    statement become one table lock. Writes escalate to EXCLUSIVE on the table, which is stronger
    and Hive-compatible. Reads escalate (``reads``) to SHARED on the table plus SHARED on its
    writers facet, which is correct only if every partition writer also takes EXCLUSIVE on that
    facet: with ``reads`` on, every partition EXCLUSIVE lock of a statement does (Hive's writers
    do not, hence no Hive peer may write those tables).
    """

    partitions: int = 0
    reads: bool = False

    @property
    def enabled(self) -> bool:
        return self.partitions > 0

    @classmethod
    def from_conf(cls, conf: Mapping[str, str] | None) -> Escalation:
        """Only the escalation keys of a conf (the rest is validated by SparkLockConfig)."""
        conf = conf or {}
        pkey = "spark.sparklock.lock.escalation.partitions"
        rkey = "spark.sparklock.lock.escalation.reads"
        return cls(
            partitions=parse_int(pkey, conf.get(pkey, DEFAULTS[pkey]), 0),
            reads=parse_bool(rkey, conf.get(rkey, DEFAULTS[rkey])),
        )


@dataclass(frozen=True)
class UnlockPolicy:
    """Who may UNLOCK (issue 17): ``any`` is Hive's behaviour; ``owner`` lets only the user in the
    locks' data (``u=<user>``) or one of ``admins`` remove them."""

    policy: str = "any"
    admins: frozenset[str] = frozenset()

    @property
    def owner_only(self) -> bool:
        return self.policy == "owner"

    def is_admin(self, user: str | None) -> bool:
        return bool(user) and user in self.admins

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> UnlockPolicy:
        pkey, akey = APPLICATION_WIDE_KEYS
        admins = str(conf.get(akey, DEFAULTS[akey]))
        names = [a.strip() for a in admins.split(",")]
        if any(":" in a or any(c.isspace() for c in a) for a in names):
            raise ConfigError(akey, admins, "comma-separated user names (no ':' or spaces)")
        return cls(
            policy=parse_choice(pkey, conf.get(pkey, DEFAULTS[pkey]), ("any", "owner")),
            admins=frozenset(a for a in names if a),
        )


@dataclass(frozen=True)
class QueryText:
    """What lock data says about the statement (issue 17): ``full`` text or a ``summary`` (its
    kind and objects, no literals), at most ``max_length`` characters (0: none)."""

    mode: str = "full"
    max_length: int = 10_000

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> QueryText:
        lkey = "spark.sparklock.lock.queryString.maxLength"
        mkey = "spark.sparklock.lock.queryString.mode"
        length = parse_int(lkey, conf.get(lkey, DEFAULTS[lkey]), 0)
        if length > QUERY_STRING_MAX_LENGTH_LIMIT:
            raise ConfigError(
                lkey, conf.get(lkey), f"an integer from 0 to {QUERY_STRING_MAX_LENGTH_LIMIT}"
            )
        return cls(
            mode=parse_choice(mkey, conf.get(mkey, DEFAULTS[mkey]), ("full", "summary")),
            max_length=length,
        )


@dataclass(frozen=True)
class SparkLockConfig:
    enabled: bool = True
    manager: str = "embedded"
    zookeeper_quorum: str = "127.0.0.1:2181"
    zookeeper_namespace: str = "hive_zookeeper_namespace"
    zookeeper_session_timeout: float = 30.0
    zookeeper_connection_timeout: float = 15.0
    #: TLS, credentials and ACLs (secrets inside never print)
    zookeeper_security: ZooKeeperSecurity = ZooKeeperSecurity()
    lock: LockSettings = LockSettings()
    escalation: Escalation = Escalation()
    #: Read by the JVM shim after a grant (FileListings); parsed here so a bad value is an error.
    refresh_listing: bool = True
    #: ``refreshListing=all``: re-list everything read, as before write epochs (comparisons)
    refresh_all: bool = False
    #: ``keep`` or ``release``: a closed server session's explicit locks (sparklock.servers).
    explicit_on_session_close: str = "keep"
    unlock: UnlockPolicy = UnlockPolicy()
    query_text: QueryText = QueryText()

    @classmethod
    def from_conf(cls, conf: Mapping[str, str] | None = None) -> SparkLockConfig:
        """Parse every ``spark.sparklock.*`` key (unknown sparklock keys are errors too)."""
        conf = dict(conf or {})
        known = set(DEFAULTS)
        for key in conf:
            if key.startswith(PREFIX) and key not in known:
                raise ConfigError(
                    key, conf[key], "one of the documented keys: " + ", ".join(sorted(known))
                )
        v = {**DEFAULTS, **{k: conf[k] for k in conf if k in known}}
        namespace = str(v["spark.sparklock.zookeeper.namespace"]).strip().strip("/")
        if not namespace or any(p in ("", ".", "..") for p in namespace.split("/")):
            raise ConfigError(
                "spark.sparklock.zookeeper.namespace",
                v["spark.sparklock.zookeeper.namespace"],
                "a znode name such as hive_zookeeper_namespace",
            )
        quorum = str(v["spark.sparklock.zookeeper.quorum"]).strip()
        if not re.match(r"^[^,\s/]+(,[^,\s/]+)*(/\S*)?$", quorum):
            raise ConfigError(
                "spark.sparklock.zookeeper.quorum", quorum, "host:port[,host:port...][/chroot]"
            )
        timeouts = {}
        for key in ("sessionTimeout", "connectionTimeout"):
            full = f"spark.sparklock.zookeeper.{key}"
            seconds = parse_duration(full, v[full])
            if seconds <= 0:
                raise ConfigError(full, v[full], DURATION_ACCEPTS + ", greater than 0")
            timeouts[key] = seconds
        interval_key = "spark.sparklock.lock.retryInterval"
        lock = LockSettings(
            num_retries=parse_int(
                "spark.sparklock.lock.numRetries", v["spark.sparklock.lock.numRetries"], 1
            ),
            retry_interval=parse_duration(interval_key, v[interval_key]),
            wait_policy=WaitPolicy(
                parse_choice(
                    "spark.sparklock.lock.waitPolicy",
                    v["spark.sparklock.lock.waitPolicy"],
                    ("queue", "retry"),
                )
            ),
            unlock_num_retries=parse_int(
                "spark.sparklock.unlock.numRetries", v["spark.sparklock.unlock.numRetries"], 1
            ),
        )
        refresh = parse_choice(
            "spark.sparklock.read.refreshListing",
            v["spark.sparklock.read.refreshListing"],
            ("true", "false", "all"),
        )
        return cls(
            enabled=parse_bool("spark.sparklock.enabled", v["spark.sparklock.enabled"]),
            manager=parse_choice(
                "spark.sparklock.manager", v["spark.sparklock.manager"], ("embedded", "zookeeper")
            ),
            zookeeper_quorum=quorum,
            zookeeper_namespace=namespace,
            zookeeper_session_timeout=timeouts["sessionTimeout"],
            zookeeper_connection_timeout=timeouts["connectionTimeout"],
            zookeeper_security=parse_security(v, parse_bool),
            lock=lock,
            escalation=Escalation.from_conf(v),
            refresh_listing=refresh != "false",
            refresh_all=refresh == "all",
            explicit_on_session_close=parse_choice(
                "spark.sparklock.explicit.onSessionClose",
                v["spark.sparklock.explicit.onSessionClose"],
                ("keep", "release"),
            ),
            unlock=UnlockPolicy.from_conf(v),
            query_text=QueryText.from_conf(v),
        )

    @property
    def namespace_root(self) -> str:
        return "/" + self.zookeeper_namespace

    def settings_key(self) -> tuple:
        """What identifies the manager instance this config needs (one per process per key)."""
        if self.manager == "embedded":
            return ("embedded",)
        return (
            "zookeeper",
            self.zookeeper_quorum,
            self.zookeeper_namespace,
            self.zookeeper_session_timeout,
            self.zookeeper_connection_timeout,
            self.zookeeper_security,
        )
