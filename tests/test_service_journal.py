"""The service's journal: each grant says how long the statement waited for its locks."""

from __future__ import annotations

import threading

from sparklock.rules.facts import Facts, parse_facts
from sparklock.service import LockService

CONF = {"spark.sparklock.lock.numRetries": "100", "spark.sparklock.lock.retryInterval": "20ms"}


def writer(session: str, execution: str) -> Facts:
    return parse_facts(
        {
            "session": session,
            "executionId": execution,
            "sql": "INSERT INTO journal_t",
            "conf": CONF,
            "writes": [
                {"kind": "table", "catalog": "spark_catalog", "database": "default", "table": "jt"}
            ],
        }
    )


def test_grant_records_the_wait_behind_a_holder():
    records: list[dict] = []
    svc = LockService()
    svc.set_journal(records.append)
    first = svc.acquire(writer("s1", "1"))
    threading.Timer(0.3, svc.release, args=(first,)).start()
    second = svc.acquire(writer("s2", "2"))  # waits for the first to be released
    svc.release(second)
    held = [r for r in records if r["ev"] == "held"]
    assert [r["handle"] for r in held] == [first, second]
    assert held[0]["waited_ns"] < 0.25e9  # nothing to wait for
    assert held[1]["waited_ns"] >= 0.25e9  # about the 0.3 s the first held its lock
