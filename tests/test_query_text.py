"""``spark.sparklock.lock.queryString.maxLength`` / ``.mode`` (issue 17 item 5): what a lock's data
says about its statement, through the service the JVM calls; Hive 2.3.10's real lock manager still
parses the data (a summary, an empty text)."""

from __future__ import annotations

import pytest

from sparklock import managers
from sparklock.protocol.messages import (
    ExplicitLockRequest,
    ShowLocksRequest,
    UnlockRequest,
    read_request,
)
from sparklock.rules.facts import parse_facts
from sparklock.service import LockService, config_of
from tests.support.hive_harness import HiveLockHarness, build_harness, missing_requirements

SECRET = "card-4111-1111"
INSERT = (
    f"INSERT INTO sales PARTITION (ds='2026-11-21') SELECT * FROM staging WHERE note = '{SECRET}'"
)


def table(name, **kw):
    return {"kind": "table", "catalog": "spark_catalog", "database": "default", "table": name, **kw}


def insert_facts(conf, session="s-qt"):
    return parse_facts(
        {
            "session": session,
            "executionId": "1",
            "sql": INSERT,
            "conf": conf,
            "command": "InsertIntoHadoopFsRelationCommand",
            "reads": [table("staging")],
            "writes": [
                table(
                    "sales",
                    partitionColumns=["ds"],
                    staticPartition={"ds": "2026-11-21"},
                    fileBased=True,
                )
            ],
        }
    )


def texts(svc, conf) -> dict[str, str]:
    """Lock name -> the query text its data carries."""
    return {r.name: r.query_string for r in svc.show_locks(ShowLocksRequest(conf=conf))}


def hold_insert(conf) -> dict[str, str]:
    svc = LockService()
    handle = svc.acquire(insert_facts(conf))
    try:
        return texts(svc, conf)
    finally:
        svc.release(handle)


def test_full_is_the_default():
    shown = hold_insert({})
    assert set(shown.values()) == {INSERT}


def test_summary_keeps_kind_and_objects_no_literals():
    shown = hold_insert({"spark.sparklock.lock.queryString.mode": "summary"})
    [text] = set(shown.values())
    assert text == (
        "InsertIntoHadoopFsRelationCommand EXCLUSIVE 1 partition of default@sales, "
        "SHARED default@staging"
    )
    assert SECRET not in text and "2026-11-21" not in text and ":" not in text


@pytest.mark.parametrize("length,expected", [("0", ""), ("11", INSERT[:11]), ("200000", INSERT)])
def test_max_length(length, expected):
    shown = hold_insert({"spark.sparklock.lock.queryString.maxLength": length})
    assert set(shown.values()) == {expected}


def test_summary_is_cut_too():
    conf = {
        "spark.sparklock.lock.queryString.mode": "summary",
        "spark.sparklock.lock.queryString.maxLength": "9",
    }
    assert set(hold_insert(conf).values()) == {"InsertInt"}


def test_explicit_lock_summary():
    conf = {"spark.sparklock.lock.queryString.mode": "summary"}
    svc = LockService()
    obj = {"database": "default", "table": "sales", "partition": [["ds", SECRET]]}
    base = {"session": "s-x", "conf": conf, "object": obj}
    svc.lock(
        read_request(ExplicitLockRequest, {**base, "mode": "SHARED", "sql": "LOCK TABLE sales ..."})
    )
    try:
        assert texts(svc, conf) == {
            f"default@sales@ds={SECRET}": f"LOCK TABLE default@sales@ds={SECRET} SHARED"
        }
    finally:
        svc.unlock(read_request(UnlockRequest, base))


# bad queryString values: test_config's table of bad values (the key and accepted values named)


# -- Hive peers still parse the data ------------------------------------------------------------
@pytest.fixture(scope="module")
def hive_jvm(zk_server):
    missing = missing_requirements()
    if missing:
        pytest.skip(f"Hive harness unavailable: {missing}")
    with HiveLockHarness(zk_server.address, "sparklock_qt_idle", build_dir=build_harness()) as h:
        yield h


@pytest.mark.hive_interop
@pytest.mark.zookeeper
@pytest.mark.parametrize(
    "setting,expected",
    [
        (
            {"spark.sparklock.lock.queryString.mode": "summary"},
            "InsertIntoHadoopFsRelationCommand EXCLUSIVE 1 partition of default@sales, "
            "SHARED default@staging",
        ),
        ({"spark.sparklock.lock.queryString.maxLength": "0"}, ""),
    ],
)
def test_hive_parses_the_data(hive_jvm, zk_server, zk_namespace, setting, expected):
    conf = {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": zk_server.address,
        "spark.sparklock.zookeeper.namespace": zk_namespace,
        **setting,
    }
    hive_jvm.use_namespace(zk_namespace)
    svc = LockService()
    handle = svc.acquire(insert_facts(conf))
    try:
        rows = hive_jvm.show()
        assert {(r.name, r.lock_mode, r.query_string) for r in rows} == {
            ("default@sales", "IMPLICIT", expected),
            ("default@sales@ds=2026-11-21", "IMPLICIT", expected),
            ("default@sales@_sparklock_writers", "IMPLICIT", expected),  # Hive lists it too
            ("default@staging", "IMPLICIT", expected),
        }
        hive_jvm.query("hive_q_qt", "insert overwrite table sales partition (ds='2026-11-21')")
        assert hive_jvm.lock("default@sales@ds=2026-11-21", "EXCLUSIVE").refused
    finally:
        svc.release(handle)
        managers.get_manager(config_of(conf)).close()
