"""Fuzzed secrets never show: not in config errors, reprs, logs (kazoo's DEBUG included) or locks.

The pure parts run many examples; the part against the session's real ZooKeeper (digest logins,
whose password kazoo itself logs at DEBUG in its ``Auth`` packet) runs a few.
"""

from __future__ import annotations

import logging
import threading
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparklock.config import SparkLockConfig
from sparklock.errors import ConfigError
from sparklock.locks.model import LockMode, LockRequest, LockType
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.wire.secure_connect import ConnectionWatch, new_client
from sparklock.managers.zookeeper.wire.security import (
    ACL_KEY,
    AUTH,
    AUTH_PASSWORD,
    SSL_ENABLED,
    SSL_KEY_PASSWORD,
)

#: Long enough, and marked, that it can only appear in a text by leaking.
SECRETS = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=6
).map(lambda s: "Zq7#" + s)


def texts_of(conf: dict[str, str]) -> list[str]:
    """Everything a user may see of ``conf``: the error, or the parsed config's repr/str."""
    try:
        config = SparkLockConfig.from_conf({"spark.sparklock.manager": "zookeeper", **conf})
    except ConfigError as exc:
        return [str(exc), repr(exc), repr(exc.value)]
    return [repr(config), str(config), repr(config.settings_key())]


@settings(max_examples=200, deadline=None)
@given(secret=SECRETS, shape=st.integers(0, 7))
def test_config_never_shows_a_secret(secret, shape):
    confs = [
        {AUTH: "digest:alice", AUTH_PASSWORD: secret},  # valid
        {AUTH: f"digest:alice:{secret}"},  # password written inline by mistake
        {AUTH: f"sasl:DIGEST-MD5:alice:{secret}"},
        {AUTH: f"kerberos:{secret}", AUTH_PASSWORD: secret},
        {"spark.sparklock.zookeeper.auth.pasword": secret},  # a typo in the key
        {AUTH: "digest:alice", AUTH_PASSWORD: secret, ACL_KEY: f"digest:alice:{secret}:cdrwa"},
        {SSL_ENABLED: "true", SSL_KEY_PASSWORD: secret},
        {AUTH: "sasl:DIGEST-MD5:alice", AUTH_PASSWORD: secret, ACL_KEY: "creator"},
    ]
    for text in texts_of(confs[shape]):
        assert secret not in text


@settings(max_examples=100, deadline=None)
@given(secret=SECRETS, noise=st.text(max_size=20))
def test_kazoo_log_lines_are_masked(secret, noise):
    records: list[logging.LogRecord] = []

    here = threading.get_ident()

    class Keep(logging.Handler):
        def emit(self, record):
            if record.thread == here:  # not another test's kazoo client, still logging
                records.append(record)

    handler = Keep(level=1)
    target = logging.getLogger("kazoo.client")
    old = target.level
    target.addHandler(handler)
    target.setLevel(1)
    try:
        watch = ConnectionWatch(1, (secret,))
        watch.debug("Sending request(xid=%s): %s", -4, f"Auth(auth='alice:{secret}{noise}')")
        watch.warning(f"inline {secret}")
        watch.log(5, "%r", (noise, secret))
    finally:
        target.removeHandler(handler)
        target.setLevel(old)
    assert len(records) == 3
    for record in records:
        assert secret not in record.getMessage()


def test_client_options_keep_the_secret_for_kazoo_only():
    config = SparkLockConfig.from_conf(
        {
            "spark.sparklock.manager": "zookeeper",
            AUTH: "digest:alice",
            AUTH_PASSWORD: "pw-Zq7#hidden",
            ACL_KEY: "creator",
        }
    )
    client, watch = new_client("127.0.0.1:1", 10.0, config.backend.security)
    try:
        assert client.auth_data == {("digest", "alice:pw-Zq7#hidden")}  # what ZooKeeper gets
        assert "pw-Zq7#hidden" not in repr(config) and "pw-Zq7#hidden" in watch._secrets
    finally:
        client.close()


@pytest.mark.zookeeper
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(secret=SECRETS)
def test_real_logins_never_log_the_password(zk_server, zk_namespace, secret):
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    handler = Keep(level=1)
    loggers = [logging.getLogger(n) for n in ("kazoo", "sparklock")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(1)
    conf = {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": zk_server.address,
        # one namespace per example: each password is another identity (refused by the last)
        "spark.sparklock.zookeeper.namespace": f"{zk_namespace}_{uuid.uuid4().hex[:8]}",
        AUTH: "digest:alice",
        AUTH_PASSWORD: secret,
        ACL_KEY: "creator",
    }
    manager = ZooKeeperLockManager(SparkLockConfig.from_conf(conf))
    try:
        t = LockObject.of_table("default", "t")
        held = manager.acquire(
            [LockRequest(t, LockMode.SHARED)],
            owner="o",
            query_id="q",
            lock_type=LockType.EXPLICIT,
        )
        rows = repr(manager.list_locks())
        manager.unlock(t)
        assert held.locks
    finally:
        manager.close()
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
    assert any("Auth(" in r for r in records)  # kazoo did log the packet, masked
    assert secret not in rows
    for line in records:
        assert secret not in line
