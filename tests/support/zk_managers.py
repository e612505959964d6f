"""ZooKeeper lock managers for tests: built from Spark conf, the way a session builds them, for the
tests that vary the conf per test (credentials, ACLs) and must close every manager they made; and
one already talking to its server, for the tests that count its requests."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping

from sparklock.config import LockSettings, SparkLockConfig
from sparklock.managers.zookeeper import ZooKeeperLockManager


def manager_conf(address: str, namespace: str, **extra: str) -> dict[str, str]:
    """Conf of a ZooKeeper manager at ``address`` that gives up after one try (a conflict shows at
    once), plus ``extra`` (credentials, ACL)."""
    return {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": address,
        "spark.sparklock.zookeeper.namespace": namespace,
        "spark.sparklock.lock.numRetries": "1",
        **extra,
    }


@contextlib.contextmanager
def closing_managers() -> Iterator[Callable[[Mapping[str, str]], ZooKeeperLockManager]]:
    """A maker of managers from conf; every manager it made is closed on exit."""
    made: list[ZooKeeperLockManager] = []

    def make(conf: Mapping[str, str]) -> ZooKeeperLockManager:
        manager = ZooKeeperLockManager(SparkLockConfig.from_conf(dict(conf)))
        made.append(manager)
        return manager

    try:
        yield make
    finally:
        for manager in made:
            manager.close()


@contextlib.contextmanager
def connected_manager(
    address: str, namespace: str, settings: LockSettings | None = None
) -> Iterator[ZooKeeperLockManager]:
    """A manager that has asked its server once (connected, and multiRead known to work, so its
    reads use their lane): where the request-counting tests start from. Closed on exit."""
    with ZooKeeperLockManager.connect(address, namespace, settings=settings or LockSettings()) as m:
        m.list_locks()
        yield m
