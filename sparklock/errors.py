"""Errors sparklock raises.

Every message starts with a stable, upper-case code (``LOCK_CONFLICT``, ``NOT_LOCKED``, ...) so
that callers, log scrapers and the JVM side can recognise the kind of failure without parsing the
rest of the text.
"""

from __future__ import annotations

import re

#: Keys whose values are secrets, or may hold one by mistake (Spark's spark.redaction.regex and
#: the ZooKeeper credentials): their values are never shown in an error.
SENSITIVE_KEY = re.compile(r"(?i)secret|pass|token|access[.]key|auth|cred")
REDACTED = "*********(redacted)"


def shown_value(key: str, value: object) -> object:
    """``value`` as an error may show it: redacted when ``key`` may hold a secret."""
    return REDACTED if value and SENSITIVE_KEY.search(key) else value


class SparkLockError(Exception):
    """Base class of every sparklock error."""

    code = "SPARKLOCK_ERROR"


class ConfigError(SparkLockError, ValueError):
    """A ``spark.sparklock.*`` value that cannot be used; names the key and what it accepts."""

    code = "INVALID_CONFIG"

    def __init__(self, key: str, value: object, accepted: str, *, checked: bool = False) -> None:
        """``checked``: the caller already made ``value`` safe to show (no redaction)."""
        self.key = key
        self.value = value if checked else shown_value(key, value)
        self.accepted = accepted
        super().__init__(f"{self.code}: {key}={self.value!r} is not valid; accepted: {accepted}")


class InvalidObjectError(SparkLockError, ValueError):
    """A database/table/partition name that cannot name a lock object."""

    code = "INVALID_LOCK_OBJECT"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code}: {message}")


class LockConflictError(SparkLockError):
    """A lock set could not be acquired within its budget.

    ``holders`` is a list of :class:`sparklock.locks.model.LockInfo` of the locks that refused it.
    """

    code = "LOCK_CONFLICT"

    def __init__(
        self,
        object_name: str,
        mode: str,
        attempts: int,
        waited_s: float,
        holders: list,
    ) -> None:
        self.object_name = object_name
        self.mode = mode
        self.attempts = attempts
        self.waited_s = waited_s
        self.holders = list(holders)
        if holders:
            who = "; ".join(h.describe() for h in holders)
        else:
            who = "holders already gone"
        super().__init__(
            f"{self.code}: could not acquire {mode} lock on {object_name} after "
            f"{attempts} attempt{'s' if attempts != 1 else ''} ({waited_s:.3f} s waited); "
            f"held by: {who}"
        )


class NotLockedError(SparkLockError):
    """UNLOCK of an object that holds no lock (Hive: "Table t is not locked")."""

    code = "NOT_LOCKED"

    def __init__(self, object_name: str, kind: str = "Object") -> None:
        self.object_name = object_name
        super().__init__(f"{self.code}: {kind} {object_name} is not locked")


class LocksLostError(SparkLockError):
    """The locks a statement held are gone (ZooKeeper session lost): it is no longer protected."""

    code = "LOCKS_LOST"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.code}: {detail}")


class LockManagerUnavailableError(SparkLockError):
    """The lock service cannot be reached (e.g. no ZooKeeper connection within the timeout)."""

    code = "LOCK_MANAGER_UNAVAILABLE"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.code}: {detail}")


class UnlockError(SparkLockError):
    """Some locks could not be released after every retry; they are listed, not swallowed."""

    code = "UNLOCK_FAILED"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.code}: {detail}")


class UnlockNotOwnerError(SparkLockError):
    """UNLOCK refused under ``spark.sparklock.unlock.policy=owner``: the locks on the object belong
    to another user (or to one sparklock cannot tell), and the asking user is no admin."""

    code = "UNLOCK_NOT_OWNER"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.code}: {detail}")


class SparkLockSetupError(SparkLockError):
    """sparklock cannot be installed into this Spark session."""

    code = "SPARKLOCK_SETUP_FAILED"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.code}: {detail}")
