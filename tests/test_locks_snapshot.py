"""The Locks tab's data (``sparklock.service.snapshot``) on the process's real embedded manager,
without Spark: who holds, who waits behind whom, the wait-for edges and their cycles, and the ring
of ended waits (``sparklock.managers.recent_waits``)."""

from __future__ import annotations

import json
import threading

import pytest

from sparklock.errors import LockConflictError
from sparklock.locks.model import LockMode, LockRequest, LockSettings, LockType, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers import get_manager, recent_waits
from sparklock.service import config_of
from sparklock.service.snapshot import deadlocks, snapshot, snapshot_json
from tests.support.locks import wait_for
from tests.support.spark import zookeeper_conf

T = LockObject.of_table("default", "snap_t")
# long enough for a few snapshots, each of which may wait up to its deadline for a manager an
# earlier module left unreachable
PATIENT = LockSettings(num_retries=300, retry_interval=0.1, wait_policy=WaitPolicy.QUEUE)


def edge(waiter: str, holder: str, obj: str) -> dict:
    return {"waiter": waiter, "holder": holder, "object": obj}


def test_cycles_are_found_once_and_paths_are_not_cycles():
    two = deadlocks([edge("s1", "s2", "b"), edge("s2", "s1", "a"), edge("s3", "s1", "a")])
    assert [d["nodes"] for d in two] == [["s1", "s2"]]
    three = deadlocks([edge("s1", "s2", "b"), edge("s2", "s3", "c"), edge("s3", "s1", "a")])
    assert [sorted(e["object"] for e in d["edges"]) for d in three] == [["a", "b", "c"]]
    assert deadlocks([edge("s1", "s2", "b"), edge("s3", "s2", "b"), edge("s2", "s2", "x")]) == []


@pytest.fixture(
    params=[
        "embedded",
        pytest.param("zookeeper", marks=pytest.mark.zookeeper),
        pytest.param("metastore", marks=pytest.mark.metastore),
    ]
)
def conf(request) -> dict[str, str]:
    """The session conf of the manager under test (ZooKeeper, metastore: the run's real
    servers)."""
    if request.param == "embedded":
        return {}
    if request.param == "metastore":
        return {
            "spark.sparklock.manager": "metastore",
            "spark.sparklock.metastore.uris": request.getfixturevalue("hive_metastore").uri,
        }
    address = request.getfixturevalue("zk_server").address
    return zookeeper_conf(address, request.getfixturevalue("zk_namespace"))


def test_a_wait_behind_an_explicit_lock_names_its_holder(conf):
    manager = get_manager(config_of(conf))
    recent_waits.clear()
    holder = manager.acquire(
        [LockRequest(T, LockMode.EXCLUSIVE)],
        owner="holder-session",
        query_id="q_holder",
        query_string="LOCK TABLE snap_t EXCLUSIVE",
        lock_type=LockType.EXPLICIT,
        user="alice",
        agent="app-1",
    )
    got: dict = {}
    waiter = threading.Thread(
        target=lambda: got.update(
            held=manager.acquire(
                [LockRequest(T, LockMode.SHARED)],
                owner="waiter-session",
                query_id="q_waiter",
                query_string="SELECT * FROM snap_t",
                settings=PATIENT,
            )
        )
    )
    waiter.start()
    try:
        # other modules' managers may still be open in this process: look for this wait only
        assert wait_for(lambda: _waits_of("q_waiter"), 10)
        snap = snapshot(app_id="app-1")
        # the metastore lists the waiting request's every component: its lock on the table here
        (row,) = [w for w in snap["waiting"] if w["object"] == "default@snap_t"]
        assert row["queryId"] == "q_waiter"
        assert (row["object"], row["mode"], row["owner"]) == ("default@snap_t", "SHARED",
                                                              "waiter-session")  # fmt: skip
        (blocker,) = row["blockedBy"]
        assert blocker["owner"] == "holder-session" and blocker["user"] == "alice"
        assert blocker["query"] == "LOCK TABLE snap_t EXCLUSIVE" and blocker["ours"]
        assert {(e["waiter"], e["holder"]) for e in snap["edges"]} == {
            ("waiter-session", "holder-session")
        }
        assert snap["deadlocks"] == []
        sessions = {s["owner"]: (s["held"], s["waiting"]) for s in snap["sessions"]}
        assert sessions["holder-session"] == (1, 0) and sessions["waiter-session"][1] >= 1
        assert json.loads(snapshot_json('{"appId": "app-1"}'))["ok"] is True
    finally:
        holder.release()
        waiter.join(10)
    got["held"].release()
    (ended,) = [r for r in recent_waits.recent() if r["queryId"] == "q_waiter"]
    assert ended["outcome"] == "GRANTED" and ended["holders"][0]["queryId"] == "q_holder"
    assert _waits_of("q_waiter") == []


def _waits_of(query_id: str) -> list[dict]:
    return [w for w in snapshot()["waiting"] if w["queryId"] == query_id]


def test_a_refused_wait_is_kept_with_its_condition(conf):
    manager = get_manager(config_of(conf))
    recent_waits.clear()
    holder = manager.acquire(
        [LockRequest(T, LockMode.EXCLUSIVE)], owner="h", query_id="q_h2",
        lock_type=LockType.EXPLICIT,
    )  # fmt: skip
    try:
        with pytest.raises(LockConflictError):
            manager.acquire(
                [LockRequest(T, LockMode.EXCLUSIVE)], owner="w", query_id="q_w2",
                settings=LockSettings(num_retries=2, retry_interval=0.05),
            )  # fmt: skip
    finally:
        holder.release()
    (ended,) = [r for r in recent_waits.recent() if r["queryId"] == "q_w2"]
    assert ended["outcome"] == "LOCK_CONFLICT" and "q_h2" in ended["error"]
