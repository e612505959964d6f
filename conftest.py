"""Shared fixtures: a real ZooKeeper server for the session (started from the pyspark jars)."""

from __future__ import annotations

import uuid

import pytest
from kazoo.client import KazooClient

from tests.support.zookeeper import ZooKeeperServer


@pytest.fixture(scope="session")
def zk_server():
    """One real ZooKeeper server for the whole run; each test uses its own namespace."""
    server = ZooKeeperServer()
    server.start()
    yield server
    server.cleanup()


@pytest.fixture
def zk_namespace() -> str:
    """A fresh namespace per test so tests never see each other's znodes."""
    return f"sparklock_test_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def zk(zk_server):
    """A plain kazoo client to inspect the tree (a second connection, closed after the test)."""
    client = KazooClient(hosts=zk_server.address)
    client.start(10)
    yield client
    client.stop()
    client.close()
