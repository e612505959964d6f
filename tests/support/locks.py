"""What the tests look at after (and while) Spark runs statements: locks held, SHOW/EXPLAIN LOCKS.

The after-test fixtures of ``conftest.py`` (``no_leftover_locks``, ``unlock_leftover_locks``)
use these, and so do the test modules.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sparklock.config import KEYS
from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers import HeldLocks, LockManager, get_manager
from sparklock.rules.facts import Facts
from sparklock.service import LockService, config_of, get_service

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def wait_for(
    predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.02
) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` seconds passed; its last answer."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def held() -> list[tuple[str, str]]:
    """``(name, mode)`` of every lock of the process's default (embedded) manager, sorted."""
    return sorted((i.name, i.mode.value) for i in get_manager(config_of({})).list_locks(None))


def session_conf(spark: SparkSession) -> dict[str, str]:
    """The session's ``spark.sparklock.*`` settings (the ones set)."""
    values = {k.key: spark.conf.get(k.key, None) for k in KEYS}
    return {k: v for k, v in values.items() if v is not None}


def session_manager(spark: SparkSession) -> LockManager:
    """The manager the session's statements use now."""
    return get_manager(config_of(session_conf(spark)))


def show_locks(spark: SparkSession) -> list[tuple[str, str]]:
    """``SHOW LOCKS`` as sorted ``(name, mode)`` rows."""
    return sorted((r[0], r[1]) for r in spark.sql("SHOW LOCKS").collect())


def explain(spark: SparkSession, statement: str) -> list[tuple[str, str]]:
    """``EXPLAIN LOCKS <statement>`` as sorted ``(name, mode)`` rows."""
    return sorted((r[0], r[1]) for r in spark.sql("EXPLAIN LOCKS " + statement).collect())


def class_of(command: str) -> str:
    """The full class name of a command the rules or lists know by its simple name (unknown:
    the name itself), for hand-written facts: the policy keys by ``commandClass``, as the JVM
    reports it."""
    from sparklock.rules.command_classes import FAIL_SAFE, NO_LOCK, simple_name
    from sparklock.rules.commands import BY_CLASS

    known = {simple_name(n): n for n in (*BY_CLASS, *NO_LOCK, *FAIL_SAFE)}
    return known.get(command, command)


def policy(facts: Facts) -> list[tuple[str, str]]:
    """The lock set the service builds from ``facts`` (no manager involved), sorted."""
    return sorted(LockService().explain(facts))


def assert_no_leftover_locks(spark: SparkSession, timeout: float = 10.0) -> None:
    """Nothing held, no handle open (RDD paths release from the query-end listener,
    asynchronously: wait a little), and ``SHOW LOCKS`` agrees."""
    assert wait_for(lambda: held() == [] and get_service().open_handles() == 0, timeout), held()
    assert show_locks(spark) == []


def unlock_all(spark: SparkSession) -> None:
    """Unlock every object the session's manager holds a lock on."""
    manager = session_manager(spark)
    for obj in {info.obj for info in manager.list_locks(None)}:
        manager.unlock(obj)


def top_level(recorded: list[Facts]) -> list[Facts]:
    """The facts of top-level executions (nested ones run inside their parents' locks)."""
    return [f for f in recorded if not f.enclosing_handles]


def requested(spark: SparkSession, action: Callable[[], object]) -> list[list[tuple[str, str]]]:
    """The lock set of each top-level execution ``action`` ran (as the service built it)."""
    from sparklock.spark.builder import callback_of

    with callback_of(spark).recording() as recorded:
        action()
    return [policy(f) for f in top_level(list(recorded))]


def take(
    manager: LockManager,
    obj: LockObject,
    mode: LockMode,
    owner: str = "o1",
    q: str = "q1",
    *,
    text: str | None = None,
    **kw: Any,
) -> HeldLocks:
    """One lock straight from a manager, as query ``q`` of ``owner`` (query text ``<q> text``)."""
    return manager.acquire(
        [LockRequest(obj, mode)],
        owner=owner,
        query_id=q,
        query_string=text if text is not None else f"{q} text",
        **kw,
    )
