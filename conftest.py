"""Shared fixtures: a real ZooKeeper server for the session, a Spark session per test module,
and the after-test lock checks (helpers they use live in ``tests/support/``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.zk_tree import inspecting
from tests.support.zookeeper import ZooKeeperServer


def pytest_configure(config):
    # here, not in pyproject.toml: tests/versions.py reinstalls its venvs when that file changes
    config.addinivalue_line(
        "markers",
        "delta: needs Delta Lake (delta-spark and its jars): tests/versions.py 3.5 and 4.2.0",
    )
    config.addinivalue_line(
        "markers",
        "iceberg: needs Apache Iceberg's Spark runtime jar: tests/versions.py 3.5 and 4.1",
    )


@pytest.fixture(scope="session")
def zk_server():
    """One real ZooKeeper server for the whole run; each test uses its own namespace."""
    server = ZooKeeperServer()
    server.start()
    yield server
    server.cleanup()


@pytest.fixture(scope="module")
def proxy(zk_server):
    """The module's path to the ZooKeeper server through a loopback proxy it can cut, silence
    and heal (a partition between a driver and ZooKeeper, storage still reachable)."""
    from tests.support.tcp_proxy import TcpProxy

    host, port = zk_server.address.rsplit(":", 1)
    with TcpProxy(host, int(port)) as p:
        yield p


@pytest.fixture
def zk_namespace() -> str:
    """A fresh namespace per test so tests never see each other's znodes."""
    return f"sparklock_test_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def zk(zk_server):
    """A plain kazoo client to inspect the tree (a second connection, closed after the test)."""
    with inspecting(zk_server.address) as client:
        yield client


@pytest.fixture(scope="module")
def spark(request, tmp_path_factory):
    """The test module's Spark session with sparklock, as its ``SPARK = SparkSpec(...)`` says.

    One session per module (the modules create tables of the same names); stopped at the end
    of the module. Session conf, not builder conf, for the lock settings: the first
    SparkContext's conf becomes the JVM's system properties, inherited by every later context.
    """
    from tests.support.spark import WAREHOUSE_KEY, SparkSpec, build_session, zookeeper_conf

    module = request.module
    spec: SparkSpec = getattr(module, "SPARK", None) or SparkSpec(app=module.__name__)
    root = tmp_path_factory.mktemp(spec.app)
    warehouse = root / "warehouse"
    session = build_session(
        spec.app,
        warehouse,
        cores=spec.cores,
        conf=spec.conf,
        hive_root=root if spec.hive else None,
        log_level=spec.log_level,
    )
    conf = dict(spec.session_conf)
    if spec.zookeeper_namespace is not None:
        address = request.getfixturevalue("zk_server").address
        conf.update(zookeeper_conf(address, spec.zookeeper_namespace))
    for key, value in {WAREHOUSE_KEY: str(warehouse), **conf}.items():
        session.conf.set(key, value)
    if spec.setup is not None:
        spec.setup(session)
    for statement in spec.setup_sql:
        session.sql(statement)
    yield session
    for key in conf:
        session.conf.unset(key)
    session.stop()


@pytest.fixture
def warehouse(spark) -> Path:
    """The warehouse directory of the module's session."""
    from tests.support.spark import WAREHOUSE_KEY

    return Path(spark.conf.get(WAREHOUSE_KEY))


@pytest.fixture
def no_leftover_locks(spark):
    """After the test: no lock held and no handle open (waits for asynchronous releases), and
    ``SHOW LOCKS`` is empty. Modules opt in with ``pytest.mark.usefixtures``."""
    from tests.support.locks import assert_no_leftover_locks

    yield
    assert_no_leftover_locks(spark)


@pytest.fixture
def unlock_leftover_locks(spark):
    """Safety net after the test: unlock whatever the session's manager still holds (the tests
    check their own locks; this keeps one failing test from failing the next ones)."""
    from tests.support.locks import unlock_all

    yield
    unlock_all(spark)


@pytest.fixture(scope="session")
def hive_metastore():
    """One real standalone Hive metastore for the whole run (tests.support.metastore)."""
    from tests.support.metastore import MetastoreServer, missing_requirements

    reason = missing_requirements()
    if reason:
        pytest.skip(f"no Hive metastore here: {reason}")
    server = MetastoreServer()
    server.start()
    yield server
    server.cleanup()
