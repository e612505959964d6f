"""Hive's ZooKeeperHiveLockManager (the real one, pyspark jars) beside an authenticated sparklock.

Hive's manager connects without credentials and creates its nodes open. With
``spark.sparklock.zookeeper.acl=open`` the two interoperate exactly as without credentials; with
``creator`` Hive still sees (and respects) sparklock's locks, but cannot lock below the nodes
sparklock created: the README's Security section says so, this shows it.
"""

from __future__ import annotations

import pytest

from sparklock.config import SparkLockConfig
from sparklock.errors import LockConflictError
from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.wire.security import ACL_KEY, AUTH, AUTH_PASSWORD
from tests.support.hive_harness import (
    HiveHarnessError,
    HiveLockHarness,
    build_harness,
    missing_requirements,
)
from tests.support.sasl import needs_pure_sasl
from tests.support.zk_managers import closing_managers, manager_conf
from tests.support.zk_security import sasl_server

pytestmark = [pytest.mark.hive_interop, pytest.mark.zookeeper]

_missing = missing_requirements()
if _missing:
    pytest.skip(f"Hive harness unavailable: {_missing}", allow_module_level=True)

P1 = LockObject.of_partition("default", "t", {"p": "1"})
P2 = LockObject.of_partition("default", "t", {"p": "2"})
P3 = LockObject.of_partition("default", "t", {"p": "3"})
T = LockObject.of_table("default", "t")


@pytest.fixture(scope="module")
def hive_jvm(zk_server):
    with HiveLockHarness(zk_server.address, "sparklock_hive_idle", build_dir=build_harness()) as h:
        yield h


@pytest.fixture
def hive(hive_jvm, zk_namespace):
    hive_jvm.use_namespace(zk_namespace)
    hive_jvm.query("hive_query_1", "select 1")
    yield hive_jvm
    hive_jvm.unlock_all()


@pytest.fixture
def alice(zk_server, zk_namespace):
    """sparklock authenticated as digest:alice; ``acl`` chosen per test."""
    credentials = {AUTH: "digest:alice", AUTH_PASSWORD: "alice-secret"}
    with closing_managers() as make:
        yield lambda acl: make(
            manager_conf(zk_server.address, zk_namespace, **credentials, **{ACL_KEY: acl})
        )


def test_hive_interoperates_under_open_acl(hive, alice):
    spark = alice("open")
    held = spark.acquire([LockRequest(P1, LockMode.EXCLUSIVE)], owner="o", query_id="spark_q")
    assert hive.lock("default@t@p=1", "EXCLUSIVE").refused
    assert hive.lock("default@t@p=1", "SHARED").refused
    assert hive.lock("default@t@p=2", "EXCLUSIVE").granted  # below sparklock's open nodes
    assert hive.unlock("default@t@p=2") == 1
    assert hive.lock("default@t@p=3", "EXCLUSIVE").granted
    with pytest.raises(LockConflictError):
        spark.acquire([LockRequest(P3, LockMode.SHARED)], owner="o", query_id="spark_q2")
    assert hive.unlock("default@t@p=3") == 1
    spark.release(held)
    assert hive.lock("default@t@p=1", "EXCLUSIVE").granted  # and sparklock's locks are gone
    assert hive.unlock("default@t@p=1") == 1


def test_under_creator_hive_sees_sparklock_locks_but_cannot_lock_below_them(hive, alice):
    """Hive creates its lock node before it looks at the others: below alice's node that create
    fails (NoAuth), so Hive's statement fails instead of running unlocked -- on every object
    below a node sparklock created, the database's and namespace's included. SHOW LOCKS reads."""
    spark = alice("creator")
    held = spark.acquire([LockRequest(T, LockMode.SHARED)], owner="o", query_id="spark_q")
    for mode in ("EXCLUSIVE", "SHARED"):
        with pytest.raises(HiveHarnessError, match="NoAuth"):
            hive.lock("default@t", mode)
    with pytest.raises(HiveHarnessError, match="NoAuth"):
        hive.lock("default@t2", "SHARED")  # a new table's node would go below alice's default
    assert [(r.name, r.mode) for r in hive.show("default@t")] == [("default@t", "SHARED")]
    spark.release(held)


@needs_pure_sasl
def test_under_creator_hive_with_the_same_sasl_identity_locks_as_a_peer(tmp_path, zk_namespace):
    """Hive's ZooKeeper client logs in with SASL from a JAAS ``Client`` section: as the same
    identity as sparklock, ``creator`` nodes are its own too and the two interoperate."""
    server = sasl_server(tmp_path / "server", {"spark": "spark-secret"})
    client_jaas = tmp_path / "client-jaas.conf"
    client_jaas.write_text(
        "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        '  username="spark" password="spark-secret";\n};\n'
    )
    server.start()
    try:
        conf = manager_conf(
            server.address,
            zk_namespace,
            **{AUTH: "sasl:DIGEST-MD5:spark", AUTH_PASSWORD: "spark-secret", ACL_KEY: "creator"},
        )
        spark = ZooKeeperLockManager(SparkLockConfig.from_conf(conf))
        # ZooKeeper 3.9's Java client refuses DIGEST-MD5 in its default FIPS mode
        options = [
            f"-Djava.security.auth.login.config={client_jaas}",
            "-Dzookeeper.fips-mode=false",
        ]
        with HiveLockHarness(
            server.address, zk_namespace, build_dir=build_harness(), jvm_options=options
        ) as hive:
            hive.query("hive_q", "select 1")
            held = spark.acquire([LockRequest(P1, LockMode.EXCLUSIVE)], owner="o", query_id="q")
            assert hive.lock("default@t@p=1", "SHARED").refused  # a conflict, not NoAuth
            assert hive.lock("default@t@p=2", "EXCLUSIVE").granted  # below sparklock's nodes
            with pytest.raises(LockConflictError):
                spark.acquire([LockRequest(P2, LockMode.SHARED)], owner="o", query_id="q2")
            assert hive.unlock("default@t@p=2") == 1
            spark.release(held)
        spark.close()
    finally:
        server.cleanup()
