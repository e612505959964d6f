"""One contract, every manager: the same scenarios run against each lock manager.

The ``manager_factory`` fixture is parametrized over the registry (``managers.registry.BACKENDS``):
every registered backend runs every scenario, made through its registry entry from a conf. The
ZooKeeper case runs against a real server (``zk_server``) in a namespace of its own, the metastore
case against a real Hive metastore (``hive_metastore``).
"""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from sparklock.config import LockSettings, SparkLockConfig
from sparklock.errors import LockConflictError, NotLockedError
from sparklock.locks.model import LockMode, LockRequest, LockType, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers import AcquisitionCancelled, LockManager
from sparklock.managers.registry import BACKENDS
from tests.support.locks import take

S, X = LockMode.SHARED, LockMode.EXCLUSIVE
T = LockObject.of_table("default", "t")
T2 = LockObject.of_table("default", "t2")
P1 = LockObject.of_partition("default", "t", {"p": "1"})
P2 = LockObject.of_partition("default", "t", {"p": "2"})
FAIL_FAST = LockSettings(num_retries=1, retry_interval=0.01, wait_policy=WaitPolicy.RETRY)


def _zookeeper_conf(request) -> dict[str, str]:
    return {
        "spark.sparklock.zookeeper.quorum": request.getfixturevalue("zk_server").address,
        "spark.sparklock.zookeeper.namespace": request.getfixturevalue("zk_namespace"),
    }


def _metastore_conf(request) -> dict[str, str]:
    return {"spark.sparklock.metastore.uris": request.getfixturevalue("hive_metastore").uri}


#: Backend name -> the conf of a test instance of it (its server is a fixture). Every backend of
#: the registry must have one: the contract runs them all.
TEST_CONFS = {
    "embedded": lambda request: {},
    "zookeeper": _zookeeper_conf,
    "metastore": _metastore_conf,
}


def _make(name: str, request, settings: LockSettings) -> LockManager:
    """A manager made the way the service makes one: conf -> config -> the registry's entry."""
    conf = {"spark.sparklock.manager": name, **TEST_CONFS[name](request)}
    config = dataclasses.replace(SparkLockConfig.from_conf(conf), lock=settings)
    return BACKENDS[name].create(config)


def test_every_registered_backend_runs_the_contract():
    assert set(TEST_CONFS) == set(BACKENDS)


@pytest.fixture(
    params=[
        pytest.param(kind, marks=[pytest.mark.metastore] if kind == "metastore" else [])
        for kind in sorted(BACKENDS)
    ]
)
def manager_factory(request):
    """Build a fresh manager of the parametrized kind with given settings."""
    made: list[LockManager] = []

    def factory(settings: LockSettings = FAIL_FAST) -> LockManager:
        m = _make(request.param, request, settings)
        made.append(m)
        return m

    yield factory
    for m in made:
        for info in m.list_locks():  # leave nothing behind for the next test
            try:
                m.unlock(info.obj)
            except NotLockedError:
                pass
        m.close()


@pytest.fixture
def mgr(manager_factory) -> LockManager:
    return manager_factory()


@pytest.mark.parametrize(
    "first,second,ok", [(S, S, True), (S, X, False), (X, S, False), (X, X, False)]
)
def test_compatibility_matrix(mgr, first, second, ok):
    held = take(mgr, T, first, "a", "qa")
    if ok:
        take(mgr, T, second, "b", "qb").release()
    else:
        with pytest.raises(LockConflictError) as err:
            take(mgr, T, second, "b", "qb")
        msg = str(err.value)
        assert msg.startswith("LOCK_CONFLICT")
        assert "default@t" in msg and second.value in msg and "qa" in msg and "qa text" in msg
        assert "1 attempt" in msg
    held.release()
    assert mgr.list_locks() == []


def test_implicit_set_takes_shared_on_ancestors(mgr):
    held = take(mgr, P1, X)
    listed = [(i.name, i.mode) for i in mgr.list_locks()]
    if mgr.kind == "metastore":
        # the metastore's rule is hierarchical itself: a table SHARED above the partition would
        # meet every other partition's EXCLUSIVE there, so it is not sent (managers.metastore)
        assert listed == [("default", S), ("default@t@p=1", X)]
    else:
        assert listed == [("default", S), ("default@t", S), ("default@t@p=1", X)]
    assert {i.data.lock_type for i in mgr.list_locks()} == {LockType.IMPLICIT}
    # another partition of the same table can be written; the table cannot
    take(mgr, P2, X, "b", "qb").release()
    with pytest.raises(LockConflictError, match="EXCLUSIVE lock on default@t "):
        take(mgr, T, X, "b", "qb")
    held.release()
    take(mgr, T, X, "b", "qb").release()


def test_all_or_nothing(mgr):
    blocker = take(mgr, T2, X, "b", "qb")
    with pytest.raises(LockConflictError, match="default@t2"):
        mgr.acquire(
            [LockRequest(T, X), LockRequest(T2, X), LockRequest(P1, S)],
            owner="a",
            query_id="qa",
        )
    assert {i.data.query_id for i in mgr.list_locks()} == {"qb"}
    blocker.release()
    assert mgr.list_locks() == []


def test_explicit_locks_are_exact_and_owner_aware(mgr):
    explicit = take(mgr, T, X, "a", "lock-a", lock_type=LockType.EXPLICIT)
    assert [(i.name, i.mode, i.data.lock_type) for i in mgr.list_locks()] == [
        ("default@t", X, LockType.EXPLICIT)
    ]
    own = take(mgr, P1, X, "a", "qa2")  # the session's own LOCK TABLE does not block it
    with pytest.raises(LockConflictError, match="lock-a"):
        take(mgr, P2, S, "b", "qb")
    own.release()
    removed = mgr.unlock(T)
    assert [i.data.query_id for i in removed] == ["lock-a"]
    with pytest.raises(NotLockedError, match="NOT_LOCKED: Table default@t is not locked"):
        mgr.unlock(T)
    explicit.release()  # idempotent after UNLOCK
    assert mgr.list_locks() == []


def test_unlock_removes_every_lock_on_exactly_that_object(mgr):
    a = take(mgr, T, S, "a", "qa", lock_type=LockType.EXPLICIT)
    b = take(mgr, T, S, "b", "qb", lock_type=LockType.EXPLICIT)
    p = take(mgr, P1, S, "c", "qc", lock_type=LockType.EXPLICIT)
    assert [i.name for i in mgr.list_locks()] == ["default@t", "default@t", "default@t@p=1"]
    assert len(mgr.unlock(T)) == 2
    assert [i.name for i in mgr.list_locks()] == ["default@t@p=1"]
    assert [i.name for i in mgr.list_locks(P1)] == ["default@t@p=1"]
    assert mgr.list_locks(T2) == []
    for h in (a, b):
        h.release()  # already gone: idempotent, touches nothing else
    assert [i.name for i in mgr.list_locks()] == ["default@t@p=1"]
    mgr.unlock(P1)
    p.release()


def _queued_behind_explicit(m: LockManager, mode: LockMode):
    """Session a's LOCK TABLE t EXCLUSIVE, and a thread of b asking ``mode`` on t (it queues);
    the thread appends b's locks to ``got`` once granted."""
    explicit = take(m, T, X, "a", "lock-a", lock_type=LockType.EXPLICIT)
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(take(m, T, mode, "b", "qb")))
    waiter.start()
    return explicit, got, waiter


def test_unlock_keeps_the_requests_queued_for_the_object(manager_factory):
    """UNLOCK removes the holders; a statement waiting in line is granted next, not sent back."""
    m = manager_factory(
        LockSettings(num_retries=200, retry_interval=0.05, wait_policy=WaitPolicy.QUEUE)
    )
    explicit, got, waiter = _queued_behind_explicit(m, X)
    deadline = time.monotonic() + 5
    while not any(i.data.query_id == "qb" for i in m.list_locks(T)):
        assert time.monotonic() < deadline, "the writer never queued"
        time.sleep(0.02)
    assert [i.data.query_id for i in m.unlock(T)] == ["lock-a"]
    waiter.join(5)
    assert got and got[0].locks
    assert [(i.data.query_id, i.state.value) for i in m.list_locks(T)] == [("qb", "ACQUIRED")]
    got[0].release()
    explicit.release()


@pytest.mark.parametrize("policy", [WaitPolicy.RETRY, WaitPolicy.QUEUE])
def test_waiter_gets_lock_when_holder_releases(manager_factory, policy):
    m = manager_factory(LockSettings(num_retries=200, retry_interval=0.02, wait_policy=policy))
    reader = take(m, T, S, "r", "qr")
    threading.Timer(0.3, reader.release).start()
    t0 = time.monotonic()
    writer = take(m, T, X, "w", "qw")
    waited = time.monotonic() - t0
    assert 0.25 < waited < 3.0
    assert [i.data.query_id for i in m.list_locks(T)] == ["qw"]
    writer.release()


@pytest.mark.parametrize("policy", [WaitPolicy.RETRY, WaitPolicy.QUEUE])
def test_budget_is_attempts_times_interval(manager_factory, policy):
    m = manager_factory(LockSettings(num_retries=5, retry_interval=0.1, wait_policy=policy))
    holder = take(m, T, X, "h", "qh")
    t0 = time.monotonic()
    with pytest.raises(LockConflictError) as err:
        take(m, P1, S, "w", "qw")
    waited = time.monotonic() - t0
    assert 0.35 < waited < 2.0, waited
    assert "qh" in str(err.value) and "SHARED lock on default@t " in str(err.value)
    assert {i.data.query_id for i in m.list_locks()} == {"qh"}
    holder.release()


def test_queue_is_fair_to_writers(manager_factory):
    """A continuous stream of overlapping readers must not starve a queued writer."""
    m = manager_factory(
        LockSettings(num_retries=100, retry_interval=0.05, wait_policy=WaitPolicy.QUEUE)
    )
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader(i: int) -> None:
        try:
            while not stop.is_set():
                h = take(m, T, S, f"r{i}", f"qr{i}")
                time.sleep(0.05)
                h.release()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    writer = take(m, T, X, "w", "qw")
    waited = time.monotonic() - t0
    writer.release()
    stop.set()
    for t in threads:
        t.join(10)
    assert not errors
    assert waited < 1.0, f"writer waited {waited:.2f}s behind readers"


def test_queued_waiter_behind_own_explicit_lock_does_not_deadlock_owner(manager_factory):
    m = manager_factory(
        LockSettings(num_retries=40, retry_interval=0.05, wait_policy=WaitPolicy.QUEUE)
    )
    explicit, got, waiter = _queued_behind_explicit(m, S)
    time.sleep(0.3)  # b is queued behind a's explicit X
    mine = take(m, T, S, "a", "qa")  # a's own statement passes b's queued node
    mine.release()
    assert not got
    m.unlock(T)
    explicit.release()
    waiter.join(5)
    assert got and got[0].locks
    got[0].release()


def test_cancel_while_queued_leaves_nothing(manager_factory):
    m = manager_factory(
        LockSettings(num_retries=100, retry_interval=0.1, wait_policy=WaitPolicy.QUEUE)
    )
    holder = take(m, T, X, "h", "qh")
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    with pytest.raises(AcquisitionCancelled, match="LOCK_WAIT_CANCELLED"):
        take(m, P1, S, "w", "qw", cancel=cancel)
    assert {i.data.query_id for i in m.list_locks()} == {"qh"}
    holder.release()


@pytest.mark.parametrize("policy", [WaitPolicy.RETRY, WaitPolicy.QUEUE])
def test_opposite_orders_never_deadlock(manager_factory, policy):
    """Sets naming the same objects in opposite orders: the global order prevents deadlock."""
    m = manager_factory(LockSettings(num_retries=400, retry_interval=0.01, wait_policy=policy))
    objs = [LockObject.of_table("default", n) for n in ("a", "b", "c")]
    errors: list[BaseException] = []
    done = [0, 0]

    def worker(i: int, order: list[LockObject]) -> None:
        try:
            for n in range(15):
                h = m.acquire(
                    [LockRequest(o, X) for o in order], owner=f"w{i}", query_id=f"q{i}-{n}"
                )
                h.release()
                done[i] += 1
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [
        threading.Thread(target=worker, args=(0, objs)),
        threading.Thread(target=worker, args=(1, list(reversed(objs)))),
    ]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors and done == [15, 15]
    assert m.list_locks() == []


def test_lock_data_is_listed(mgr):
    held = mgr.acquire(
        [LockRequest(T, S)], owner="a", query_id="query-7", query_string="SELECT :x\n FROM t"
    )
    info = mgr.list_locks(T)[0]
    assert info.data.query_id == "query-7"
    assert info.data.query_string == "SELECT x FROM t"
    assert info.data.lock_type is LockType.IMPLICIT
    assert abs(info.data.lock_time_ms / 1000 - time.time()) < 60
    assert info.data.client
    held.release()
