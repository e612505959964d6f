"""A statement that waits long logs a WARN line naming whom it waits for: once it has waited
``spark.sparklock.lock.waitWarnInterval``, then after each further such period, under both wait
policies, on the embedded manager and on a real ZooKeeper; shorter waits log no WARN line."""

from __future__ import annotations

import logging
import re

import pytest

from sparklock.config import SparkLockConfig
from sparklock.errors import LockConflictError
from sparklock.locks.model import LockMode, LockSettings, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers import LockManager
from sparklock.managers.embedded import EmbeddedLockManager
from tests.support.locks import take

T = LockObject.of_table("default", "t")


def settings(policy: WaitPolicy, warn_s: float) -> LockSettings:
    """A 1.2 s budget (20 × 60 ms) and a WARN line every ``warn_s``."""
    return LockSettings(
        num_retries=20, retry_interval=0.06, wait_policy=policy, wait_warn_interval=warn_s
    )


def warnings_of(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "has waited" in r.getMessage()
    ]


@pytest.fixture(params=["embedded", "zookeeper"])
def make(request):
    made: list[LockManager] = []

    def build(s: LockSettings) -> LockManager:
        if request.param == "embedded":
            m: LockManager = EmbeddedLockManager(s)
        else:
            from sparklock.managers.zookeeper import ZooKeeperLockManager

            address = request.getfixturevalue("zk_server").address
            namespace = request.getfixturevalue("zk_namespace")
            m = ZooKeeperLockManager.connect(address, namespace, settings=s)
        made.append(m)
        return m

    yield build
    for m in made:
        m.close()


def _reader_refused_behind_a_holder(m, caplog, user: str | None = None) -> None:
    """``q_holder`` holds EXCLUSIVE on ``T``; ``q_reader``'s SHARED waits out its budget, logged."""
    held = take(m, T, LockMode.EXCLUSIVE, "holder", "q_holder", **({"user": user} if user else {}))
    try:
        with caplog.at_level(logging.INFO, logger="sparklock"):
            with pytest.raises(LockConflictError):
                take(m, T, LockMode.SHARED, "reader", "q_reader")
    finally:
        held.release()


@pytest.mark.zookeeper
@pytest.mark.parametrize("policy", [WaitPolicy.QUEUE, WaitPolicy.RETRY])
def test_a_long_wait_warns_once_then_periodically(make, policy, caplog):
    m = make(settings(policy, 0.4))
    _reader_refused_behind_a_holder(m, caplog, user="alice")
    lines = warnings_of(caplog)
    # from 0.4 s into the wait, once per 0.4 s (not once per attempt: retry tries every 60 ms)
    waited = [float(re.search(r"has waited ([0-9.]+) s", line).group(1)) for line in lines]
    assert len(waited) >= 2 and waited[0] >= 0.4, lines
    assert all(w >= 0.4 * (k + 1) - 0.05 for k, w in enumerate(waited)), lines  # on schedule
    assert all("query q_reader has waited" in line for line in lines), lines
    assert all("q_holder" in line and "user=alice" in line for line in lines), lines


@pytest.mark.zookeeper
def test_a_short_wait_or_zero_logs_no_warning(make, caplog):
    for warn_s in (5.0, 0.0):
        m = make(settings(WaitPolicy.QUEUE, warn_s))
        _reader_refused_behind_a_holder(m, caplog)
    assert warnings_of(caplog) == []
    assert any("waits for SHARED lock" in r.getMessage() for r in caplog.records)  # INFO


def test_the_key_and_its_default():
    assert SparkLockConfig.from_conf({}).lock.wait_warn_interval == 10.0
    conf = {"spark.sparklock.lock.waitWarnInterval": "2min"}
    assert SparkLockConfig.from_conf(conf).lock.wait_warn_interval == 120.0
