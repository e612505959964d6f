"""The lock vocabulary's own settings (escalation, query text) agree with their documented keys."""

from __future__ import annotations

from sparklock.config import DEFAULTS, SparkLockConfig
from sparklock.locks.statement_settings import Escalation, QueryText


def test_defaults_are_the_documented_ones() -> None:
    assert Escalation.from_conf({}) == Escalation.from_conf(DEFAULTS) == Escalation()
    assert QueryText.from_conf({}) == QueryText.from_conf(DEFAULTS) == QueryText()
    parsed = SparkLockConfig.from_conf({})
    assert (parsed.escalation, parsed.query_text) == (Escalation(), QueryText())


def test_values_are_parsed() -> None:
    conf = {
        "spark.sparklock.lock.escalation.partitions": "5",
        "spark.sparklock.lock.escalation.reads": "true",
        "spark.sparklock.lock.queryString.mode": "summary",
        "spark.sparklock.lock.queryString.maxLength": "7",
    }
    assert Escalation.from_conf(conf) == Escalation(partitions=5, reads=True)
    assert QueryText.from_conf(conf) == QueryText(mode="summary", max_length=7)
