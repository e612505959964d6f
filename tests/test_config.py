"""``spark.sparklock.*`` parsing: defaults, Spark-style values, errors that name the key."""

from __future__ import annotations

import pytest

from sparklock.config import SparkLockConfig
from sparklock.errors import ConfigError
from sparklock.locks.model import WaitPolicy
from sparklock.values import format_duration, parse_duration


def test_defaults():
    c = SparkLockConfig.from_conf({})
    assert c.enabled and c.manager == "embedded"
    assert c.backend is None  # embedded: no section of its own
    zk = SparkLockConfig.from_conf({"spark.sparklock.manager": "zookeeper"}).backend
    assert zk.namespace == "hive_zookeeper_namespace"
    assert c.lock.num_retries == 100 and c.lock.retry_interval == 1.0
    assert c.lock.wait_policy is WaitPolicy.QUEUE and c.lock.unlock_num_retries == 10
    assert zk.session_timeout == 30 and zk.connection_timeout == 15
    assert c.lock.budget == 100


@pytest.mark.parametrize(
    "text,seconds",
    [
        ("100ms", 0.1),
        ("4s", 4),
        ("2min", 120),
        ("2m", 120),
        ("1h", 3600),
        ("250", 0.25),
        ("1.5s", 1.5),
        ("500us", 0.0005),
        (" 3S ", 3),
    ],
)
def test_durations(text, seconds):
    assert parse_duration("k", text) == pytest.approx(seconds)


def test_values_parsed():
    c = SparkLockConfig.from_conf(
        {
            "spark.sparklock.enabled": "FALSE",
            "spark.sparklock.manager": "zookeeper",
            "spark.sparklock.zookeeper.quorum": "h1:2181,h2:2181/chroot",
            "spark.sparklock.zookeeper.namespace": "/my_ns/",
            "spark.sparklock.lock.numRetries": "1",
            "spark.sparklock.lock.retryInterval": "100ms",
            "spark.sparklock.lock.waitPolicy": "retry",
        }
    )
    assert not c.enabled and c.manager == "zookeeper" and c.backend.namespace_root == "/my_ns"
    assert c.lock.num_retries == 1 and c.lock.retry_interval == 0.1
    assert c.lock.wait_policy is WaitPolicy.RETRY


@pytest.mark.parametrize(
    "key,value,accepted",
    [
        ("spark.sparklock.enabled", "yes", "true or false"),
        ("spark.sparklock.manager", "hive", "embedded or zookeeper"),
        ("spark.sparklock.lock.numRetries", "0", "integer >= 1"),
        ("spark.sparklock.lock.numRetries", "many", "integer >= 1"),
        ("spark.sparklock.lock.retryInterval", "fast", "duration"),
        ("spark.sparklock.lock.retryInterval", "10 parsecs", "duration"),
        ("spark.sparklock.lock.waitPolicy", "fifo", "queue or retry"),
        ("spark.sparklock.unlock.numRetries", "-1", "integer >= 1"),
        ("spark.sparklock.zookeeper.sessionTimeout", "0s", "greater than 0"),
        ("spark.sparklock.zookeeper.namespace", "a/../b", "znode name"),
        ("spark.sparklock.zookeeper.quorum", "", "host:port"),
        ("spark.sparklock.lock.numretries", "3", "documented keys"),
        ("spark.sparklock.lock.queryString.maxLength", "-1", "integer >= 0"),
        ("spark.sparklock.lock.queryString.maxLength", "200001", "from 0 to 200000"),
        ("spark.sparklock.lock.queryString.mode", "none", "full or summary"),
    ],
)
def test_bad_values_name_key_and_accepted(key, value, accepted):
    with pytest.raises(ConfigError) as err:
        SparkLockConfig.from_conf({key: value})
    msg = str(err.value)
    assert msg.startswith("INVALID_CONFIG") and key in msg and accepted in msg


def test_non_sparklock_keys_ignored():
    assert SparkLockConfig.from_conf({"spark.master": "local[2]"}).enabled


def test_format_duration():
    assert [format_duration(s) for s in (0.1, 4, 120)] == ["100ms", "4s", "2min"]
