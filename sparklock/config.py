"""``spark.sparklock.*`` configuration: parsing, defaults, validation.

The generic keys live here; each backend owns its section (``spark.sparklock.<backend>.*``: keys,
defaults, validation, docs rows), which this module asks the registry for
(:mod:`sparklock.managers.registry`). Value syntax: :mod:`sparklock.values`.

Usable without Spark (a plain mapping of key → string), so the managers and the command-line tool
share exactly the parser the Spark bridge uses. Values follow Spark's conventions: durations such as
``100ms``, ``4s``, ``2min``; booleans ``true``/``false``. A bad value raises :class:`ConfigError`
naming the key and what it accepts.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .config_keys import FIRST, REST
from .errors import ConfigError
from .locks.model import LockSettings, WaitPolicy
from .locks.statement_settings import Escalation, QueryText
from .managers.registry import BACKENDS, backend
from .values import (
    PREFIX,
    ConfigKey,
    parse_bool,
    parse_choice,
    parse_duration,
    parse_int,
)

MANAGER = "spark.sparklock.manager"


def _manager_row() -> ConfigKey:
    """``spark.sparklock.manager``: its values are the registered backends."""
    names = [b.summary for b in BACKENDS.values()]
    text = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    return ConfigKey(MANAGER, "embedded", text + ".")


#: Every documented key, in the docs' order (their table is checked against this list): the
#: generic keys, with each backend's section after ``spark.sparklock.manager``.
KEYS: tuple[ConfigKey, ...] = (
    FIRST + (_manager_row(),) + tuple(k for b in BACKENDS.values() for k in b.keys) + REST
)
DEFAULTS = {k.key: k.default for k in KEYS}
SCOPE_KEY = "spark.sparklock.unlock.scope"

#: Keys a session must not change for itself (the JVM registers them as static SQL confs, so
#: ``SET``/``spark.conf.set`` of them fails): who may UNLOCK is the application's decision, not
#: the asking session's.
APPLICATION_WIDE_KEYS = ("spark.sparklock.unlock.policy", "spark.sparklock.admins")


def unknown_key(key: str, value: object, known: set[str]) -> ConfigError:
    """The error of a ``spark.sparklock.*`` key that does not exist: it names the nearest real
    key (a misspelling is the usual cause) before the whole list."""
    near = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
    hint = f"did you mean {near[0]}?" if near else ""
    return ConfigError(
        key, value, "one of the documented keys: " + ", ".join(sorted(known)), hint=hint
    )


@dataclass(frozen=True)
class UnlockPolicy:
    """Who may UNLOCK: ``any`` is Hive's behaviour; ``owner`` lets only the user in the
    locks' data (``u=<user>``) or one of ``admins`` remove them."""

    policy: str = "any"
    admins: frozenset[str] = frozenset()
    #: ``all`` (Hive: every granted lock on the object) or ``explicit`` (LOCK TABLE's only)
    scope: str = "all"

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
            scope=parse_choice(
                SCOPE_KEY, conf.get(SCOPE_KEY, DEFAULTS[SCOPE_KEY]), ("all", "explicit")
            ),
        )


@dataclass(frozen=True)
class SparkLockConfig:
    enabled: bool = True
    manager: str = "embedded"
    #: The chosen backend's own section (e.g. ``ZooKeeperSettings``), made by its registry
    #: entry; None here means its defaults.
    backend: Any = None
    lock: LockSettings = LockSettings()
    escalation: Escalation = Escalation()
    #: Read by the JVM shim after a grant (FileListings); parsed here so a bad value is an error.
    refresh_listing: bool = True
    #: ``refreshListing=all``: re-list everything read, as before write epochs (comparisons)
    refresh_all: bool = False
    #: ``keep`` or ``release``: a closed server session's explicit locks (sparklock.servers).
    explicit_on_session_close: str = "keep"
    #: ``keep`` or ``release``: a driver's explicit locks when its application ends normally.
    explicit_on_application_end: str = "keep"
    unlock: UnlockPolicy = UnlockPolicy()
    query_text: QueryText = QueryText()

    @classmethod
    def from_conf(cls, conf: Mapping[str, str] | None = None) -> SparkLockConfig:
        """Parse every ``spark.sparklock.*`` key (unknown sparklock keys are errors too)."""
        conf = dict(conf or {})
        known = set(DEFAULTS)
        for key in conf:
            if key.startswith(PREFIX) and key not in known:
                raise unknown_key(key, conf[key], known)
        v = {**DEFAULTS, **{k: conf[k] for k in conf if k in known}}
        manager = parse_choice(MANAGER, v[MANAGER], tuple(BACKENDS))
        everything = {**conf, **v}  # a section may read other keys (spark.hadoop.*)
        for other in BACKENDS.values():  # every section is checked, the chosen one is kept
            section = other.parse(everything)
            if other.name == manager:
                chosen = section
        interval_key = "spark.sparklock.lock.retryInterval"
        warn_key = "spark.sparklock.lock.waitWarnInterval"
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
            wait_warn_interval=parse_duration(warn_key, v[warn_key]),
        )
        refresh = parse_choice(
            "spark.sparklock.read.refreshListing",
            v["spark.sparklock.read.refreshListing"],
            ("true", "false", "all"),
        )
        return cls(
            enabled=parse_bool("spark.sparklock.enabled", v["spark.sparklock.enabled"]),
            manager=manager,
            backend=chosen,
            lock=lock,
            escalation=Escalation.from_conf(v),
            refresh_listing=refresh != "false",
            refresh_all=refresh == "all",
            explicit_on_session_close=parse_choice(
                "spark.sparklock.explicit.onSessionClose",
                v["spark.sparklock.explicit.onSessionClose"],
                ("keep", "release"),
            ),
            explicit_on_application_end=parse_choice(
                "spark.sparklock.explicit.onApplicationEnd",
                v["spark.sparklock.explicit.onApplicationEnd"],
                ("keep", "release"),
            ),
            unlock=UnlockPolicy.from_conf(v),
            query_text=QueryText.from_conf(v),
        )

    def __post_init__(self) -> None:
        if self.backend is None:  # built in code (tests, tools): the backend's defaults
            section = backend(self.manager).parse(DEFAULTS)
            object.__setattr__(self, "backend", section)

    def settings_key(self) -> tuple:
        """What identifies the manager instance this config needs (one per process per key)."""
        return (self.manager, self.backend)
