"""Memory: the managers and the client hold O(locks held) — nothing stays per finished statement.

Structural checks (no lock, handle, owner entry, live set or orphan left once statements end) plus
a tracemalloc bound: after a warm-up, many more statements must not grow the heap measurably.
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from sparklock.config import LockSettings, SparkLockConfig
from sparklock.errors import LockConflictError
from sparklock.locks.model import LockMode, LockRequest, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers.embedded import EmbeddedLockManager
from sparklock.rules.facts import parse_facts
from sparklock.service import LockService
from tests.support.zookeeper import ZooKeeperServer

FAIL_FAST = LockSettings(num_retries=1, retry_interval=0.01, wait_policy=WaitPolicy.RETRY)
# Heap growth allowed for a few hundred more statements (a leak of one HeldLocks or LockInfo per
# statement would be hundreds of bytes each, i.e. far above this).
GROWTH_BYTES = 48 * 1024


def statement(m, i: int) -> None:
    """One statement: a few partitions written, a conflicting one refused, then released."""
    objs = [LockObject.of_partition("fp", f"t{i % 7}", {"p": str(i % 13 + k)}) for k in range(3)]
    held = m.acquire(
        [LockRequest(o, LockMode.EXCLUSIVE) for o in objs],
        owner=f"s{i % 3}",
        query_id=f"q{i}",
        query_string="INSERT INTO fp.t PARTITION (p) SELECT ...",
        settings=FAIL_FAST,
    )
    with pytest.raises(LockConflictError):
        m.acquire(
            [LockRequest(objs[0], LockMode.SHARED)],
            owner="other",
            query_id=f"r{i}",
            settings=FAIL_FAST,
        )
    held.release()


def heap_growth(run, warmup: int, more: int) -> int:
    """Heap growth over ``more`` statements after ``warmup``. Traced from the warm-up on: a
    bounded buffer (the Locks tab's recent waits) that replaces entries made before tracing
    would otherwise count every new entry and none of the freed ones."""
    tracemalloc.start()
    try:
        for i in range(warmup):
            run(i)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(warmup, warmup + more):
            run(i)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_embedded_manager_keeps_nothing_per_statement():
    m = EmbeddedLockManager(FAIL_FAST)
    growth = heap_growth(lambda i: statement(m, i), 200, 400)
    assert m.lock_count() == 0 and m.list_locks() == []
    assert not m._entries
    assert growth < GROWTH_BYTES, f"heap grew by {growth} bytes over 400 statements"


def test_service_keeps_nothing_per_statement():
    svc = LockService()
    conf = {"spark.sparklock.lock.numRetries": "1"}

    def run(i: int) -> None:
        facts = {
            "session": f"s{i % 3}",
            "executionId": str(i),
            "sql": "INSERT INTO fp_svc PARTITION (p='1') SELECT 1",
            "conf": conf,
            "writes": [
                {
                    "kind": "table",
                    "database": "default",
                    "table": f"fp_svc{i % 5}",
                    "partitionColumns": ["p"],
                    "staticPartition": {"p": str(i % 11)},
                }
            ],
        }
        svc.release(svc.acquire(parse_facts(facts)))

    growth = heap_growth(run, 200, 400)
    assert svc.open_handles() == 0
    assert growth < GROWTH_BYTES, f"heap grew by {growth} bytes over 400 statements"


@pytest.fixture(scope="module")
def zk():
    """A server of the module's own (the client registry is checked empty on it)."""
    with ZooKeeperServer() as server:
        yield server


@pytest.mark.zookeeper
def test_zookeeper_manager_and_client_keep_nothing_per_statement(zk):
    from sparklock.managers.zookeeper import ZooKeeperLockManager
    from sparklock.managers.zookeeper.settings import ZooKeeperSettings
    from sparklock.managers.zookeeper.wire import session as zkclient

    config = SparkLockConfig(
        manager="zookeeper", backend=ZooKeeperSettings(quorum=zk.address, namespace="footprint")
    )
    m = ZooKeeperLockManager(config)
    try:
        growth = heap_growth(lambda i: statement(m, i), 100, 300)
        assert m.list_locks() == []
        assert not m._live and not m._orphans
        registry = zkclient.owner_registry(zk.address)
        assert len(registry) == 0 and not registry._below and not registry._held
        assert len(m._absent) <= 1024  # bounded hints, not per statement
        assert zk.connection_count() == 1
        assert growth < GROWTH_BYTES, f"heap grew by {growth} bytes over 300 statements"
    finally:
        m.close()
