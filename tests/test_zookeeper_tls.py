"""TLS to ZooKeeper against a real server serving TLS (``secureClientPort``, Netty, PEM stores).

The certificates are made here with ``openssl``: a CA, a server certificate for ``localhost``
only (so ``127.0.0.1`` is a hostname mismatch), a client certificate (the server requires one,
ZooKeeper's default ``ssl.clientAuth=need``) and a CA that signed nothing the server uses. One
server for the module; each test its own namespace.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from sparklock.cli import main
from sparklock.config import SparkLockConfig
from sparklock.errors import ConfigError, LockManagerUnavailableError
from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.wire.security import (
    SSL_CA,
    SSL_CERT,
    SSL_ENABLED,
    SSL_HOSTNAME,
    SSL_KEY,
    SSL_KEY_PASSWORD,
)
from tests.support.zk_security import Certificates, make_certificates, missing_tls_tools, tls_server
from tests.support.zk_tree import is_lock

pytestmark = pytest.mark.zookeeper

_missing = missing_tls_tools()
if _missing:
    pytest.skip(_missing, allow_module_level=True)

T = LockObject.of_table("default", "t")
#: far longer than any diagnosed failure takes: a refusal must not wait for it
SLOW_TIMEOUT = "60s"


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("tls"), "DNS:localhost")


@pytest.fixture(scope="module")
def tls_zk(certs):
    server = tls_server(certs)
    server.start()
    yield server
    server.cleanup()


def tls_conf(certs: Certificates, server, namespace: str, **overrides: str) -> dict[str, str]:
    conf = {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": f"localhost:{server.secure_port}",
        "spark.sparklock.zookeeper.namespace": namespace,
        "spark.sparklock.zookeeper.connectionTimeout": SLOW_TIMEOUT,
        SSL_ENABLED: "true",
        SSL_CA: str(certs.ca),
        SSL_CERT: str(certs.client_cert),
        SSL_KEY: str(certs.client_key),
    }
    conf.update(overrides)
    return conf


@pytest.fixture
def tls_client(certs, tls_zk) -> Iterator[KazooClient]:
    """A kazoo client over TLS, to look at the tree."""
    client = KazooClient(
        hosts=f"localhost:{tls_zk.secure_port}",
        use_ssl=True,
        ca=str(certs.ca),
        certfile=str(certs.client_cert),
        keyfile=str(certs.client_key),
        check_hostname=True,
    )
    client.start(15)
    yield client
    client.stop()
    client.close()


def lock_once(conf: dict[str, str]) -> list[str]:
    """Take and release EXCLUSIVE on default.t with a manager of ``conf``; the names held."""
    manager = ZooKeeperLockManager(SparkLockConfig.from_conf(conf))
    try:
        held = manager.acquire([LockRequest(T, LockMode.EXCLUSIVE)], owner="o", query_id="q")
        names = sorted(i.name for i in manager.list_locks())
        manager.release(held)
        assert manager.list_locks() == []
        return names
    finally:
        manager.close()


def refusal(conf: dict[str, str]) -> tuple[str, float]:
    """The error text of a first statement that cannot connect, and how long it took."""
    started = time.monotonic()
    with pytest.raises(LockManagerUnavailableError) as err:
        lock_once(conf)
    return str(err.value), time.monotonic() - started


def test_lock_and_release_over_tls(certs, tls_zk, tls_client, zk_namespace):
    conf = tls_conf(certs, tls_zk, zk_namespace)
    manager = ZooKeeperLockManager(SparkLockConfig.from_conf(conf))
    try:
        held = manager.acquire([LockRequest(T, LockMode.EXCLUSIVE)], owner="o", query_id="q")
        locks = [c for c in tls_client.get_children(f"/{zk_namespace}/default/t") if is_lock(c)]
        assert locks == ["LOCK-EXCLUSIVE-0000000000"]
        manager.release(held)
        assert not tls_client.exists(f"/{zk_namespace}/default/t")
    finally:
        manager.close()


def test_encrypted_client_key_with_its_password(certs, tls_zk, zk_namespace):
    conf = tls_conf(certs, tls_zk, zk_namespace)
    conf[SSL_KEY] = str(certs.client_key_encrypted)
    conf[SSL_KEY_PASSWORD] = certs.client_key_password
    assert lock_once(conf) == ["default", "default@t"]


def test_wrong_key_password_is_a_config_error_that_hides_it(certs, tls_zk, zk_namespace):
    conf = tls_conf(certs, tls_zk, zk_namespace)
    conf[SSL_KEY] = str(certs.client_key_encrypted)
    conf[SSL_KEY_PASSWORD] = "not-the-key-password"
    with pytest.raises(ConfigError) as err:
        SparkLockConfig.from_conf(conf)
    assert SSL_KEY_PASSWORD in str(err.value)
    assert "not-the-key-password" not in str(err.value)


def test_untrusted_server_certificate_refused_at_once_naming_the_trust_store(
    certs, tls_zk, zk_namespace
):
    message, took = refusal(tls_conf(certs, tls_zk, zk_namespace, **{SSL_CA: str(certs.other_ca)}))
    assert "LOCK_MANAGER_UNAVAILABLE" in message and SSL_CA in message
    assert "certificate verify failed" in message
    assert took < 30, f"a refused certificate waited {took:.1f} s (connection timeout 60 s)"


def test_hostname_verification_is_on_by_default(certs, tls_zk, zk_namespace):
    by_ip = {"spark.sparklock.zookeeper.quorum": f"127.0.0.1:{tls_zk.secure_port}"}
    message, took = refusal({**tls_conf(certs, tls_zk, zk_namespace), **by_ip})
    assert SSL_HOSTNAME in message and "mismatch" in message
    assert took < 30
    unchecked = {**tls_conf(certs, tls_zk, zk_namespace), **by_ip, SSL_HOSTNAME: "false"}
    assert lock_once(unchecked) == ["default", "default@t"]


def test_server_requiring_a_client_certificate_refuses_a_client_without_one(
    certs, tls_zk, zk_namespace
):
    conf = tls_conf(certs, tls_zk, zk_namespace, **{SSL_CERT: "", SSL_KEY: ""})
    message, took = refusal(conf)
    assert SSL_CERT in message and took < 30


def test_tls_client_on_a_plain_port_names_the_key(certs, tls_zk, zk_namespace):
    plain_port = {"spark.sparklock.zookeeper.quorum": f"localhost:{tls_zk.port}"}
    message, took = refusal({**tls_conf(certs, tls_zk, zk_namespace), **plain_port})
    assert "TLS" in message and "secureClientPort" in message and took < 30


def test_plain_client_on_the_tls_port_is_told_about_tls(certs, tls_zk, zk_namespace):
    conf = tls_conf(certs, tls_zk, zk_namespace)
    conf.update({SSL_ENABLED: "false", "spark.sparklock.zookeeper.connectionTimeout": "2s"})
    message, _ = refusal(conf)
    assert "within 2 s" in message and f"{SSL_ENABLED}=true" in message


def test_client_certificate_alone_is_an_identity_for_creator_acls(
    certs, tls_zk, tls_client, zk_namespace
):
    conf = tls_conf(certs, tls_zk, zk_namespace, **{"spark.sparklock.zookeeper.acl": "creator"})
    manager = ZooKeeperLockManager(SparkLockConfig.from_conf(conf))
    try:
        held = manager.acquire([LockRequest(T, LockMode.EXCLUSIVE)], owner="o", query_id="q")
        node = f"/{zk_namespace}/default/t"
        acl = tls_client.get_acls(node)[0]
        assert [(a.id.scheme, a.id.id, a.perms) for a in acl] == [
            ("x509", "CN=client", 31),
            ("world", "anyone", 1),
        ]
        manager.release(held)
    finally:
        manager.close()


def test_cli_takes_the_same_keys(certs, tls_zk, zk_namespace):
    """``python -m sparklock locks --conf ...`` over TLS, and its refusal naming the key."""
    conf = tls_conf(certs, tls_zk, zk_namespace)
    manager = ZooKeeperLockManager(SparkLockConfig.from_conf(conf))
    try:
        held = manager.acquire([LockRequest(T, LockMode.SHARED)], owner="o", query_id="cli_q")
        args = [f"--conf={k}={v}" for k, v in conf.items() if k != "spark.sparklock.manager"]
        out = io.StringIO()
        assert main(["locks", *args], out=out) == 0
        assert "default@t" in out.getvalue() and "cli_q" in out.getvalue()
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            untrusted = [*args, f"--conf={SSL_CA}={certs.other_ca}"]
            assert main(["locks", *untrusted], out=io.StringIO()) == 2
        assert SSL_CA in err.getvalue()
        manager.release(held)
    finally:
        manager.close()


@pytest.mark.parametrize(
    "key,value,accepted",
    [
        (SSL_CA, "/nonexistent/ca.pem", "readable PEM file"),
        (SSL_CERT, "", "set together with"),
        (SSL_HOSTNAME, "maybe", "true or false"),
    ],
)
def test_bad_tls_settings_name_the_key(certs, tls_zk, key, value, accepted):
    conf = tls_conf(certs, tls_zk, "ns")
    conf[key] = value
    with pytest.raises(ConfigError) as err:
        SparkLockConfig.from_conf(conf)
    assert key in str(err.value) and accepted in str(err.value)


@pytest.mark.spark
def test_spark_statements_lock_over_tls_with_credentials(
    spark, certs, tls_zk, tls_client, zk_namespace
):
    """A Spark session's statements over TLS, as digest:alice with creator ACLs; SHOW LOCKS
    EXTENDED shows the lock and nothing of the credentials."""
    secret = "alice-tls-digest-secret"
    conf = tls_conf(certs, tls_zk, zk_namespace)
    conf.update(
        {
            "spark.sparklock.zookeeper.auth": "digest:alice",
            "spark.sparklock.zookeeper.auth.password": secret,
            "spark.sparklock.zookeeper.acl": "creator",
        }
    )
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        spark.sql("CREATE TABLE tls_t (id INT) USING parquet")
        spark.sql("INSERT INTO tls_t VALUES (1)")
        spark.sql("LOCK TABLE tls_t SHARED")
        rows = spark.sql("SHOW LOCKS EXTENDED").collect()
        assert [(r[0], r[1]) for r in rows] == [("default@tls_t", "SHARED")]
        assert secret not in repr(rows)
        shown = spark.sql("SET spark.sparklock.zookeeper.auth.password").collect()
        assert secret not in repr(shown)  # Spark's redaction: the key says "password"
        node = f"/{zk_namespace}/default/tls_t"
        lock = next(c for c in tls_client.get_children(node) if is_lock(c))
        acl = tls_client.get_acls(f"{node}/{lock}")[0]
        # creator: every identity of the connection, the client certificate's (x509) too
        assert {(a.id.scheme, a.id.id.split(":")[0], a.perms) for a in acl} == {
            ("digest", "alice", 31),
            ("x509", "CN=client", 31),
            ("world", "anyone", 1),
        }
        assert spark.sql("SELECT count(*) FROM tls_t").collect()[0][0] == 1
        spark.sql("UNLOCK TABLE tls_t")
        assert spark.sql("SHOW LOCKS").collect() == []
        spark.sql("DROP TABLE tls_t")
    finally:
        for key in conf:
            spark.conf.unset(key)
