"""ZooKeeper lock managers for tests: built from Spark conf, the way a session builds them, for the
tests that vary the conf per test (credentials, ACLs) and must close every manager they made; and
one already talking to its server, for the tests that count its requests, with the fixtures of
such a test module."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping

import pytest

from sparklock.config import LockSettings, SparkLockConfig
from sparklock.managers.zookeeper import ZooKeeperLockManager
from tests.support.zk_tree import inspecting
from tests.support.zookeeper import ZooKeeperServer


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


def request_counting_fixtures(prefix: str) -> tuple[Callable, Callable, Callable, Callable]:
    """The fixtures of a module that counts its server's requests: ``server`` (the module's own,
    so no other module's clients talk to it), ``ns`` (a namespace per test, ``prefix`` + the
    test's name), ``manager`` (a :func:`connected_manager` in ``ns``) and ``other`` (a second
    client, another process as far as the manager knows). Assign them to module names::

        server, ns, manager, other = request_counting_fixtures("co_")
    """

    @pytest.fixture(scope="module")
    def server():
        with ZooKeeperServer() as zk:
            yield zk

    @pytest.fixture
    def ns(request) -> str:
        return prefix + request.node.name.replace("[", "_").replace("]", "")

    @pytest.fixture
    def manager(server, ns):
        with connected_manager(server.address, ns) as m:
            yield m

    @pytest.fixture
    def other(server):
        with inspecting(server.address) as client:
            yield client

    return server, ns, manager, other
