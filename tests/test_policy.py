"""Facts → locks, without Spark: the policy table and the service the JVM calls."""

from __future__ import annotations

import pytest

from sparklock.errors import LockConflictError, NotLockedError
from sparklock.protocol.messages import (
    ExplicitLockRequest,
    ShowLocksRequest,
    UnlockRequest,
    read_request,
)
from sparklock.rules.facts import parse_facts
from sparklock.rules.policy import requests_for
from sparklock.service import LockService, config_of


def table(name, db="default", **kw):
    return {"kind": "table", "catalog": "spark_catalog", "database": db, "table": name, **kw}


def explain(facts):
    return LockService().explain(parse_facts(facts))


def test_read_locks_tables_and_pruned_partitions():
    facts = {
        "command": "Project",
        "reads": [
            table("a"),
            table(
                "b",
                db="other",
                partitionColumns=["p", "q"],
                partitions=[{"p": "1", "q": "x"}, {"p": "1", "q": "y"}],
            ),
        ],
    }
    assert explain(facts) == [
        ("default", "SHARED"),
        ("default@a", "SHARED"),
        ("other", "SHARED"),
        ("other@b", "SHARED"),
        ("other@b@p=1", "SHARED"),
        ("other@b@p=1/q=x", "SHARED"),
        ("other@b@p=1/q=y", "SHARED"),
    ]


def test_temp_views_lock_nothing_themselves_other_catalogs_lock_their_table():
    facts = {"reads": [table("v", isTemp=True), {**table("x"), "catalog": "iceberg"}]}
    assert explain(facts) == [
        ("iceberg.", "SHARED"),
        ("iceberg.default.", "SHARED"),
        ("iceberg.default.x", "SHARED"),
    ]


@pytest.mark.parametrize(
    "write,expected",
    [
        (
            {"partitionColumns": ["p"], "staticPartition": {"p": "a"}, "dynamicColumns": []},
            [("default@t@p=a", "EXCLUSIVE")],
        ),
        (
            {
                "partitionColumns": ["p", "q"],
                "staticPartition": {"p": "a"},
                "dynamicColumns": ["q"],
            },
            [("default@t@p=a", "EXCLUSIVE")],
        ),
        (
            {"partitionColumns": ["p"], "staticPartition": {}, "dynamicColumns": ["p"]},
            [("default@t", "EXCLUSIVE")],
        ),
        ({"partitionColumns": [], "overwrite": True}, [("default@t", "EXCLUSIVE")]),
    ],
)
def test_insert_targets(write, expected):
    rows = explain({"writes": [table("t", **write)]})
    exclusive = [r for r in rows if r[1] == "EXCLUSIVE"]
    assert exclusive == expected
    assert ("default", "SHARED") in rows


def test_file_based_writers_of_one_table_serialise_readers_do_not():
    write = table("t", partitionColumns=["p"], staticPartition={"p": "1"}, fileBased=True)
    rows = explain({"writes": [write]})
    assert ("default@t@_sparklock_writers", "EXCLUSIVE") in rows
    assert ("default@t", "SHARED") in rows
    read = explain({"reads": [table("t", partitionColumns=["p"], partitions=[{"p": "2"}])]})
    assert all("_sparklock_writers" not in name for name, _ in read)


def test_insert_select_same_table_x_wins():
    facts = {
        "reads": [table("t", partitionColumns=["p"], partitions=[{"p": "1"}, {"p": "2"}])],
        "writes": [table("t", partitionColumns=["p"], staticPartition={"p": "1"})],
    }
    rows = dict(explain(facts))
    assert rows["default@t@p=1"] == "EXCLUSIVE" and rows["default@t@p=2"] == "SHARED"
    assert rows["default@t"] == "SHARED"


def test_partition_spec_case_and_order_follow_the_table():
    facts = {
        "writes": [table("T", partitionColumns=["p", "q"], staticPartition={"Q": "b", "P": "a"})]
    }
    assert [r.obj.name for r in requests_for(parse_facts(facts)).requests] == ["default@t@p=a/q=b"]


CONF = {"spark.sparklock.lock.numRetries": "1", "spark.sparklock.lock.retryInterval": "10ms"}


def test_service_acquire_release_and_conflict():
    svc = LockService()
    w = {
        "session": "s1",
        "executionId": "1",
        "sql": "INSERT INTO t",
        "conf": CONF,
        "writes": [table("svc_t")],
    }
    h = svc.acquire(parse_facts(w))
    assert h and svc.open_handles() == 1
    with pytest.raises(LockConflictError, match="INSERT INTO t"):
        svc.acquire(parse_facts({**w, "session": "s2", "executionId": "2"}))
    svc.release(h)
    svc.release(h)  # idempotent
    assert svc.open_handles() == 0
    off = parse_facts({**w, "conf": {**CONF, "spark.sparklock.enabled": "false"}})
    assert svc.acquire(off) == ""


def test_service_statements():
    svc = LockService()
    obj = {"database": "default", "table": "svc_stmt", "partition": [["p", "a/b"]]}
    base = {"session": "s1", "conf": CONF}
    svc.lock(
        read_request(
            ExplicitLockRequest,
            {**base, "object": obj, "mode": "EXCLUSIVE", "sql": "LOCK TABLE"},
        )
    )
    locks = svc.show_locks(
        read_request(
            ShowLocksRequest, {**base, "object": {"database": "default", "table": "svc_stmt"}}
        )
    )
    assert [(r.name, r.mode, r.lock_type) for r in locks] == [
        ("default@svc_stmt@p=a%2Fb", "EXCLUSIVE", "EXPLICIT")
    ]
    svc.unlock(read_request(UnlockRequest, {**base, "object": obj}))
    with pytest.raises(NotLockedError):
        svc.unlock(read_request(UnlockRequest, {**base, "object": obj}))
    off = {**base, "conf": {"spark.sparklock.enabled": "false"}}
    assert svc.show_locks(read_request(ShowLocksRequest, off)) == []
    svc.unlock(read_request(UnlockRequest, {**off, "object": obj}))  # no-op when disabled


def test_config_cache_returns_same_object():
    assert config_of({"a": "b"}) is config_of({"a": "b"})


def test_nested_execution_runs_inside_its_parents_locks():
    svc = LockService()
    outer = {"session": "s9", "executionId": "1", "conf": CONF, "reads": [table("nest_t")]}
    h1 = svc.acquire(parse_facts(outer))  # SHARED on the table
    inner = {
        "session": "s9",
        "executionId": "2",
        "conf": CONF,
        "enclosingHandles": [h1],
        "writes": [table("nest_t", fileBased=True)],
    }
    h2 = svc.acquire(parse_facts(inner))  # upgrade to EXCLUSIVE: its own SHARED does not block it
    names = {r.name for r in svc.held(h2).locks}
    assert names == {"default@nest_t", "default@nest_t@_sparklock_writers"}  # db already held
    with pytest.raises(LockConflictError):  # another session still waits for both
        svc.acquire(parse_facts({**outer, "session": "other", "executionId": "3"}))
    same = {**inner, "executionId": "4", "enclosingHandles": [h1, h2], "writes": [table("nest_t")]}
    assert (
        svc.acquire(parse_facts(same)) == ""
    )  # everything already held by the enclosing executions
    svc.release(h2)
    svc.release(h1)
    assert svc.open_handles() == 0
