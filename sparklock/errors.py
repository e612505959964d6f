"""Errors sparklock raises, as PySpark users expect them.

Every error is a :class:`pyspark.errors.PySparkException`: ``getCondition()`` (and the older
``getErrorClass()``) is its stable upper-case code (``LOCK_CONFLICT``, ``NOT_LOCKED``, ...),
``getSqlState()`` its SQLSTATE (:class:`~sparklock.failures.Condition`),
``getMessageParameters()`` its details as text. ``str()`` is the one-paragraph message, which
starts with the code so that log scrapers and older callers still recognise it; the structured
details are attributes (``LockConflictError.holders``, ``ConfigError.key``, ...).

The same classes reach user code from ``spark.sql(...)``, DataFrame actions and the lock
statements: the JVM carries the condition and parameters on its ``SparkThrowable`` and PySpark's
error conversion rebuilds the Python error from them (:mod:`sparklock.spark.exceptions`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

try:
    from pyspark.errors import PySparkException
except ImportError:  # packaging only: pip's isolated build (setup.py's jars) has no pyspark
    PySparkException = Exception  # type: ignore[assignment,misc]

from .failures import Condition, Failure, Holder, holders_of, holders_parameter

#: Keys whose values are secrets, or may hold one by mistake (Spark's spark.redaction.regex and
#: the ZooKeeper credentials): their values are never shown in an error.
SENSITIVE_KEY = re.compile(r"(?i)secret|pass|token|access[.]key|auth|cred")
REDACTED = "*********(redacted)"


def shown_value(key: str, value: object) -> object:
    """``value`` as an error may show it: redacted when ``key`` may hold a secret."""
    return REDACTED if value and SENSITIVE_KEY.search(key) else value


class SparkLockError(PySparkException):
    """Base class of every sparklock error.

    Built without PySpark's error-class registry (sparklock's conditions are not Spark's), so the
    accessors answer from the class's ``code`` and the parameters given here.
    """

    code = "SPARKLOCK_ERROR"

    def __init__(self, message: str, parameters: Mapping[str, str] | None = None) -> None:
        Exception.__init__(self, message)
        self._message = message
        self._parameters = {k: str(v) for k, v in (parameters or {}).items()}
        # What PySparkException's own methods read, on 3.5 and 4.x alike.
        self._errorClass = self._error_class = self.code
        self._messageParameters = self._message_parameters = self._parameters
        self._contexts: list = []

    def getCondition(self) -> str:  # noqa: N802 - PySpark's name
        return self.code

    def getErrorClass(self) -> str:  # noqa: N802 - PySpark's name (3.5)
        return self.code

    def getSqlState(self) -> str:  # noqa: N802 - PySpark's name
        return Condition.of(self.code).sql_state

    def getMessageParameters(self) -> dict[str, str]:  # noqa: N802 - PySpark's name
        return dict(self._parameters)

    def getMessage(self) -> str:  # noqa: N802 - PySpark's name
        return self._message

    def getQueryContext(self) -> list:  # noqa: N802 - PySpark's name
        return []

    def getBreakingChangeInfo(self) -> None:  # noqa: N802 - PySpark's name
        return None

    def __str__(self) -> str:
        return self._message

    def __reduce__(self):
        return (_rebuilt, (type(self), self._message, self._parameters))

    def failure(self) -> Failure:
        """The condition and parameters as they cross the bridge."""
        return Failure(self.code, dict(self._parameters))

    def _restore(self, parameters: Mapping[str, str]) -> None:
        """Set the structured attributes from message parameters (an error rebuilt from the
        JVM's); subclasses with attributes override it."""

    @classmethod
    def rebuilt(cls, message: str, parameters: Mapping[str, str]) -> SparkLockError:
        """The error of ``message`` and ``parameters``, as the JVM reported it."""
        error = cls.__new__(cls)
        SparkLockError.__init__(error, message, parameters)
        error._restore(error._parameters)
        return error


def _rebuilt(cls: type[SparkLockError], message: str, parameters: dict) -> SparkLockError:
    return cls.rebuilt(message, parameters)


def error_class(code: str) -> type[SparkLockError]:
    """sparklock's public class of a condition (:data:`CLASSES`), else :class:`SparkLockError`."""
    return CLASSES.get(code, SparkLockError)


def from_failure(message: str, failure: Failure | None) -> SparkLockError:
    """The Python error of a failure the JVM reported (its class chosen by condition)."""
    if failure is None:
        head = message.split(":", 1)[0]
        failure = Failure(head if head in Condition.__members__ else SparkLockError.code)
    error = error_class(failure.condition).rebuilt(message, failure.parameters)
    if type(error) is SparkLockError:
        error.code = failure.condition  # a condition with no class of its own
    return error


class ConfigError(SparkLockError, ValueError):
    """A ``spark.sparklock.*`` value that cannot be used; names the key and what it accepts."""

    code = "INVALID_CONFIG"

    def __init__(
        self, key: str, value: object, accepted: str, *, checked: bool = False, hint: str = ""
    ) -> None:
        """``checked``: the caller already made ``value`` safe to show (no redaction);
        ``hint``: said before the accepted values (e.g. the key that was probably meant)."""
        self.key = key
        self.value = value if checked else shown_value(key, value)
        self.accepted = accepted
        self.hint = hint
        hinted = f" ({hint})" if hint else ""
        super().__init__(
            f"{self.code}: {key}={self.value!r} is not valid{hinted}; accepted: {accepted}",
            {"key": key, "value": str(self.value), "accepted": accepted, "hint": hint},
        )

    def _restore(self, parameters: Mapping[str, str]) -> None:
        self.key = parameters.get("key", "")
        self.value = parameters.get("value", "")
        self.accepted = parameters.get("accepted", "")
        self.hint = parameters.get("hint", "")


class InvalidObjectError(SparkLockError, ValueError):
    """A database/table/partition name that cannot name a lock object."""

    code = "INVALID_LOCK_OBJECT"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code}: {message}")


class LockConflictError(SparkLockError):
    """A lock set could not be acquired within its budget.

    ``holders`` lists the locks that refused it (:class:`~sparklock.failures.Holder`:
    mode, object, query id, user, client, since, query); ``object_name``/``mode`` say which lock
    was wanted, ``attempts``/``waited_s`` how long it was tried.
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
        """``holders``: :class:`~sparklock.locks.model.LockInfo` s or Holders."""
        self.object_name = object_name
        self.mode = mode
        self.attempts = attempts
        self.waited_s = waited_s
        self.holders = [Holder.of(h) for h in holders]
        who = "; ".join(_describe(h) for h in self.holders) or "holders already gone"
        super().__init__(
            f"{self.code}: could not acquire {mode} lock on {object_name} after "
            f"{attempts} attempt{'s' if attempts != 1 else ''} ({waited_s:.3f} s waited); "
            f"held by: {who}",
            {
                "object": object_name,
                "mode": mode,
                "attempts": str(attempts),
                "waited": f"{waited_s:.3f}",
                "holders": holders_parameter(self.holders),
            },
        )

    def _restore(self, parameters: Mapping[str, str]) -> None:
        self.object_name = parameters.get("object", "")
        self.mode = parameters.get("mode", "")
        self.attempts = int(parameters.get("attempts") or 0)
        self.waited_s = float(parameters.get("waited") or 0.0)
        self.holders = holders_of(parameters.get("holders"))


def _describe(h: Holder) -> str:
    """A holder in a message: mode, kind, object and who holds it."""
    query = h.query if len(h.query) <= 120 else h.query[:117] + "..."
    return (
        f"{h.mode} {h.lock_type.lower()} lock on {h.object} (query_id={h.query_id or '?'}, "
        f"user={h.user or '?'}, client={h.client or '?'}, query={query!r})"
    )


class DeadlockError(SparkLockError):
    """The statement waited in a cycle of lock owners (each holding what the next one waits for)
    and was chosen to give up so that the others proceed; it holds none of the locks it asked
    for. ``cycle`` names who holds and who waits for what, ``victim`` the owner that gave up
    (the youngest waiter). Retrying is safe: the others finish first."""

    code = "LOCK_DEADLOCK"

    def __init__(self, object_name: str, mode: str, cycle: str, victim: str) -> None:
        self.object_name = object_name
        self.mode = mode
        self.cycle = cycle
        self.victim = victim
        super().__init__(
            f"{self.code}: gave up waiting for {mode} lock on {object_name} to break a {cycle}",
            {"object": object_name, "mode": mode, "cycle": cycle, "victim": victim},
        )

    def _restore(self, parameters: Mapping[str, str]) -> None:
        self.object_name = parameters.get("object", "")
        self.mode = parameters.get("mode", "")
        self.cycle = parameters.get("cycle", "")
        self.victim = parameters.get("victim", "")


class NotLockedError(SparkLockError):
    """UNLOCK of an object that holds no lock (Hive: "Table t is not locked")."""

    code = "NOT_LOCKED"

    def __init__(self, object_name: str, kind: str = "Object") -> None:
        self.object_name = object_name
        super().__init__(
            f"{self.code}: {kind} {object_name} is not locked", {"object": object_name}
        )

    def _restore(self, parameters: Mapping[str, str]) -> None:
        self.object_name = parameters.get("object", "")


class LocksLostError(SparkLockError):
    """The locks a statement held are gone (ZooKeeper session lost): it is no longer protected.

    ``committed`` tells a retrying caller which case it is: True when the statement had
    completed (every commit it made passed its lease check) before the loss was found at its
    release, so what it wrote is visible and running it again would write it twice; False when
    it was fenced or refused before completing (its commit was refused or its jobs cancelled; a
    statement with several commits may have made the earlier ones: check its output)."""

    code = "LOCKS_LOST"

    def __init__(self, detail: str, committed: bool = False) -> None:
        self.committed = committed
        params = {"committed": "true"} if committed else None
        super().__init__(f"{self.code}: {detail}", params)

    def _restore(self, parameters: Mapping[str, str]) -> None:
        self.committed = parameters.get("committed") == "true"


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


class LockWaitCancelledError(SparkLockError):
    """The statement was cancelled (job group or tag cancelled, interrupt, Ctrl-C, a server
    session closed) while it waited for its locks; it holds none."""

    code = "LOCK_WAIT_CANCELLED"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.code}: {detail}")


#: The class each condition raises in user code.
CLASSES: dict[str, type[SparkLockError]] = {
    c.code: c
    for c in (
        SparkLockError,
        ConfigError,
        InvalidObjectError,
        LockConflictError,
        DeadlockError,
        NotLockedError,
        LocksLostError,
        LockManagerUnavailableError,
        UnlockError,
        UnlockNotOwnerError,
        SparkLockSetupError,
        LockWaitCancelledError,
    )
}
