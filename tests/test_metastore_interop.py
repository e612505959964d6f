"""The metastore manager against Hive 4's own lock client on a real standalone metastore.

Hive's side is ``tests/hive_interop/MetastoreLockHarness.java``: Hive's ``HiveMetaStoreClient``
sending the request ``DbTxnManager`` builds for a statement (in a transaction, as Hive 4 runs
every query), waiting as ``DbLockManager`` does. Each side must wait for the other exactly as
Hive's rules say, and each must list the other's locks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from sparklock.config import LockSettings
from sparklock.errors import LockConflictError
from sparklock.locks.model import LockMode, LockRequest, LockType, WaitPolicy
from sparklock.locks.objects import LockObject
from tests.support.locks import take, wait_for
from tests.support.metastore_harness import MetastoreLockHarness
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.metastore

S, X = LockMode.SHARED, LockMode.EXCLUSIVE
T = LockObject.of_table("default", "t")
P1 = LockObject.of_partition("default", "t", {"p": "1"})
P2 = LockObject.of_partition("default", "t", {"p": "2"})
FAIL_FAST = LockSettings(num_retries=1, retry_interval=0.01, wait_policy=WaitPolicy.RETRY)


def _manager(uri: str, lock: LockSettings = FAIL_FAST, **metastore):
    from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings

    return MetastoreLockManager(MetastoreSettings(uris=uri, **metastore), lock)


@pytest.fixture(scope="module")
def hive(hive_metastore):
    with MetastoreLockHarness(hive_metastore.uri) as harness:
        yield harness


@pytest.fixture
def mgr(hive_metastore):
    m = _manager(hive_metastore.uri)
    yield m
    for info in m.list_locks():
        if info.owner is not None:
            m.unlock(info.obj)
    m.close()


def test_hive_readers_wait_for_a_spark_partition_write(mgr, hive):
    held = take(mgr, P1, X, "spark", "spark-write")
    same = hive.statement("hive-read-1", "bob", "default@t@p=1:R")
    other = hive.statement("hive-read-2", "bob", "default@t@p=2:R")
    whole = hive.statement("hive-read-3", "bob", "default@t:R")
    assert (same.state, other.state, whole.state) == ("WAITING", "ACQUIRED", "WAITING")
    assert not hive.wait(same, 0.3)
    held.release()
    assert hive.wait(same, 10) and hive.wait(whole, 10)
    for request in (same, other, whole):
        hive.release(request)


def test_spark_waits_for_a_hive_insert(mgr, hive):
    insert = hive.statement("hive-insert", "bob", "default@t:X")
    assert insert.state == "ACQUIRED"
    with pytest.raises(LockConflictError) as err:
        take(mgr, P1, S, "spark", "spark-read")
    assert "hive-insert" in str(err.value) and "default@t" in str(err.value)
    take(mgr, LockObject.of_table("default", "t2"), X, "spark", "spark-other").release()
    hive.release(insert)
    take(mgr, P1, S, "spark", "spark-read").release()


@pytest.mark.parametrize("hive_mode", ["W", "E"])
def test_hive_acid_writers_let_spark_read_not_write(mgr, hive, hive_mode):
    """SHARED_WRITE / EXCL_WRITE are ACID writers' locks: readers never wait for them (they
    read a snapshot), every non-ACID writer does."""
    acid = hive.statement(f"hive-acid-{hive_mode}", "bob", f"default@t:{hive_mode}")
    assert acid.state == "ACQUIRED"
    take(mgr, T, S, "spark", "spark-read").release()
    with pytest.raises(LockConflictError, match=f"hive-acid-{hive_mode}"):
        take(mgr, P1, X, "spark", "spark-write")
    hive.release(acid)


def test_the_queue_is_fair_across_hive_and_spark(hive_metastore, hive):
    queued = _manager(
        hive_metastore.uri, LockSettings(num_retries=100, retry_interval=0.05)
    )  # queue policy: keeps its place in line
    try:
        reader = take(queued, T, S, "spark-r", "spark-read")
        writer = hive.statement("hive-overwrite", "bob", "default@t:X")
        assert writer.state == "WAITING"
        got: list[object] = []
        late = threading.Thread(target=lambda: got.append(take(queued, T, S, "r2", "late")))
        late.start()
        time.sleep(0.5)
        assert not got  # the later reader waits behind Hive's queued writer
        reader.release()
        assert hive.wait(writer, 10)
        hive.release(writer)
        late.join(10)
        assert got
        got[0].release()  # type: ignore[attr-defined]
    finally:
        queued.close()


def test_hive_show_locks_lists_spark_locks(mgr, hive):
    held = mgr.acquire(
        [LockRequest(P1, X)],
        owner="spark",
        query_id="spark-query-42",
        query_string="INSERT INTO t PARTITION (p=1) SELECT 1",
        user="alice",
    )
    # Hive's agent info: the query id first, then the owning session and the lock type
    rows = [r for r in hive.show() if r.agent == "spark-query-42:s=spark:l=I"]
    assert {(r.db, r.table, r.partition, r.type, r.state, r.user) for r in rows} == {
        ("default", None, None, "SHARED_READ", "ACQUIRED", "alice"),
        ("default", "t", "p=1", "EXCLUSIVE", "ACQUIRED", "alice"),
    }
    held.release()
    assert not [r for r in hive.show() if (r.agent or "").startswith("spark-query-42:")]


def test_sparklock_lists_hive_locks(mgr, hive):
    request = hive.statement("hive-q-7", "bob", "default@t@p=2:X")
    listed = [i for i in mgr.list_locks(T) if i.data.query_id == "hive-q-7"]
    assert [(i.name, i.mode, i.data.user, i.owner) for i in listed] == [
        ("default@t@p=2", X, "bob", None)
    ]
    hive.release(request)


def test_a_killed_driver_s_locks_expire(hive_metastore, hive):
    """The metastore times out what nobody heartbeats any more: a killed driver's locks, its
    LOCK TABLE locks included, go after metastore.txn.timeout (10 s here)."""
    code = textwrap.dedent(f"""
        import sys, time
        from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings
        from sparklock.locks.model import LockMode, LockRequest, LockType
        from sparklock.locks.objects import LockObject
        m = MetastoreLockManager(MetastoreSettings(uris={hive_metastore.uri!r}))
        m.acquire([LockRequest(LockObject.of_table("default", "killed"), LockMode.EXCLUSIVE)],
                  owner="doomed", query_id="doomed-lock", lock_type=LockType.EXPLICIT)
        print("HELD", flush=True)
        time.sleep(600)
    """)
    driver = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    try:
        assert driver.stdout is not None and driver.stdout.readline().strip() == "HELD"
        time.sleep(4)  # heartbeats keep it while the driver lives (interval 10 s / 3)
        blocked = hive.statement("hive-after-kill", "bob", "default@killed:X")
        assert blocked.state == "WAITING"
        os.kill(driver.pid, signal.SIGKILL)
        started = time.monotonic()
        assert hive.wait(blocked, 30)
        assert time.monotonic() - started < 25
        hive.release(blocked)
    finally:
        driver.kill()
        driver.wait(10)


def test_unanswered_heartbeats_fence_before_the_metastore_expires(hive_metastore):
    """Cut between driver and metastore: the statement's locks are marked lost (fenced) while
    the metastore still holds them, i.e. before its timeout could give them to anyone else."""
    host, port = hive_metastore.uri.removeprefix("thrift://").split(":")
    with TcpProxy(host, int(port)) as proxy:
        m = _manager(proxy.uri, socket_timeout=1.0, lease_margin=3.0)
        watcher = _manager(hive_metastore.uri)
        try:
            held = take(m, LockObject.of_table("default", "fenced"), X, "spark", "cut-off")
            proxy.cut()
            assert wait_for(lambda: held.lost, timeout=15)
            assert "fenced" in (held.lost_reason or "")
            still = [i.data.query_id for i in watcher.list_locks()]
            assert "cut-off" in still  # not yet expired by the metastore
            assert m.lease_until() <= time.monotonic() + 0.001
        finally:
            m.close()
            watcher.close()
    assert wait_for(
        lambda: "cut-off" not in [i.data.query_id for i in watcher_list(hive_metastore.uri)],
        timeout=25,
    )


def test_a_lock_after_the_link_reset_an_idle_connection_is_granted(hive_metastore):
    """The link resets the driver's idle pooled connections (a network reset, a metastore
    restart, a load balancer's idle timeout). A lock request is never retried (a lost answer
    may have queued it), so it must go on a fresh connection, not into a closed one."""
    host, port = hive_metastore.uri.removeprefix("thrift://").split(":")
    with TcpProxy(host, int(port)) as proxy:
        m = _manager(proxy.uri)
        try:
            obj = LockObject.of_table("default", "pooled")
            take(m, obj, X, "spark", "before").release()
            proxy.cut()
            proxy.reopen()
            take(m, obj, X, "spark", "after").release()
        finally:
            m.close()


def watcher_list(uri: str):
    m = _manager(uri)
    try:
        return m.list_locks()
    finally:
        m.close()


def test_explicit_lock_type_is_kept_for_this_process(mgr):
    held = take(mgr, T, S, "spark", "lock-t", lock_type=LockType.EXPLICIT)
    assert [(i.name, i.data.lock_type) for i in mgr.list_locks(T)] == [
        ("default@t", LockType.EXPLICIT)
    ]
    mgr.unlock(T)
    held.release()


def test_the_writers_facet_is_a_partition_level_lock_hive_accepts(mgr, hive):
    """Every Spark write takes the table's writers' facet: Hive 4 parses each partition-level
    name as k=v (it failed the whole request before), lists it, and it excludes a second writer
    of the table while a reader of one partition goes on."""
    facet = LockObject.table_writers("default", "t")
    held = take(mgr, facet, X, "spark", "spark-writer")
    rows = [r for r in hive.show() if (r.agent or "").split(":")[0] == "spark-writer"]
    assert {(r.table, r.partition, r.type) for r in rows} == {
        (None, None, "SHARED_READ"),
        ("t", "_sparklock_facet=writers", "EXCLUSIVE"),
    }
    assert [i.obj for i in mgr.list_locks(T) if i.data.query_id == "spark-writer"] == [facet]
    with pytest.raises(LockConflictError, match="spark-writer"):
        take(mgr, facet, X, "other", "second-writer")
    take(mgr, P1, S, "other", "reader").release()
    held.release()


def test_a_cycle_through_a_waiting_hive_statement_fails_the_spark_statement(hive_metastore, hive):
    """Spark's session holds ``LOCK TABLE a``; a Hive statement asks for a and b and waits
    behind it; the session's next statement asks for b and queues behind the Hive request: a
    cycle through Hive's request, which sparklock cannot make give up, so the Spark statement
    fails with LOCK_DEADLOCK at once; once the session unlocks a, Hive's statement runs."""
    from sparklock.errors import DeadlockError

    a, b = LockObject.of_table("default", "cyc_a"), LockObject.of_table("default", "cyc_b")
    patient = LockSettings(num_retries=300, retry_interval=0.1, wait_policy=WaitPolicy.QUEUE)
    m = _manager(hive_metastore.uri, patient)
    try:
        held = take(m, a, X, "s1", "lock-a", lock_type=LockType.EXPLICIT)
        both = hive.statement("hive-a-and-b", "bob", "default@cyc_a:X,default@cyc_b:X")
        assert both.state == "WAITING"
        started = time.monotonic()
        with pytest.raises(DeadlockError) as caught:
            take(m, b, X, "s1", "s1-wants-b")
        assert time.monotonic() - started < 5
        e = caught.value
        assert e.victim == "s1 statement s1-wants-b" and e.object_name == "default@cyc_b"
        assert f"held EXCLUSIVE by hive txn {both.txnid}" in e.cycle, e.cycle
        assert [r.state for r in hive.show() if r.table == "cyc_b"] == ["WAITING"]  # Hive's
        held.release()
        assert hive.wait(both, 10)
        hive.release(both)
    finally:
        m.close()
