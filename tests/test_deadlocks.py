"""Deadlocks between lock owners: found within about a second of closing, one victim gives up.

Sessions holding explicit locks (``LOCK TABLE``) while their statements wait for each other's can
deadlock; one statement's own sorted lock set cannot. The victim (the youngest waiting statement,
:mod:`sparklock.locks.wait_for`) fails with ``LOCK_DEADLOCK`` (SQLSTATE 40P01) naming the cycle;
the others go on. Run against the managers that detect deadlocks.
"""

from __future__ import annotations

import threading
import time

import pytest

from sparklock.errors import DeadlockError
from sparklock.locks.model import LockMode, LockSettings, LockType, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers.embedded import EmbeddedLockManager
from sparklock.managers.zookeeper import ZooKeeperLockManager
from tests.support.locks import take

X, S = LockMode.EXCLUSIVE, LockMode.SHARED
A, B, C = (LockObject.of_table("default", n) for n in ("a", "b", "c"))
#: a budget far longer than any detection: a test that waits it out has failed
LONG = {"num_retries": 600, "retry_interval": 0.1}


@pytest.fixture(
    params=["embedded", "zookeeper", pytest.param("metastore", marks=pytest.mark.metastore)]
)
def managers(request):
    """``make(policy, n)``: the managers of ``n`` sessions' drivers -- one embedded manager
    (every session in one driver), or ``n`` ZooKeeper managers (one per driver) on a real
    server in a namespace of the test's own, or ``n`` metastore managers (one per driver,
    each with its own connections) on a real Hive 4 metastore (``queue`` policy only: the
    ``retry`` policy withdraws a waiting request at once, so nothing waits in the metastore)."""
    made: list = []

    def make(policy: WaitPolicy, n: int) -> list:
        settings = LockSettings(wait_policy=policy, **LONG)
        if request.param == "embedded":
            m = EmbeddedLockManager(settings)
            made.append(m)
            return [m] * n
        if request.param == "metastore":
            if policy is WaitPolicy.RETRY:
                pytest.skip(
                    "not detected, by design: under the retry policy the metastore manager "
                    "withdraws a refused request, so no wait stays in the metastore's graph "
                    "(docs/metastore.md, Deadlocks)"
                )
            from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings

            uri = request.getfixturevalue("hive_metastore").uri
            ms = [MetastoreLockManager(MetastoreSettings(uris=uri), settings) for _ in range(n)]
            made.extend(ms)
            return ms
        address = request.getfixturevalue("zk_server").address
        namespace = request.getfixturevalue("zk_namespace")
        ms = [ZooKeeperLockManager.connect(address, namespace, settings=settings) for _ in range(n)]
        made.extend(ms)
        return ms

    yield make
    for m in made:
        m.close()


class Waiter(threading.Thread):
    """One session's statement asking for a lock in the background; its outcome and timing."""

    def __init__(self, m, obj, mode, owner, q, lock_type=LockType.EXPLICIT) -> None:
        super().__init__(daemon=True)
        self.args = (m, obj, mode, owner, q, lock_type)
        self.held = None
        self.error: BaseException | None = None
        self.ended = 0.0
        self.start()

    def run(self) -> None:
        m, obj, mode, owner, q, lock_type = self.args
        try:
            self.held = take(m, obj, mode, owner, q, lock_type=lock_type)
        except BaseException as e:  # noqa: BLE001 - the test reads it
            self.error = e
        self.ended = time.monotonic()


def _explicit(m, obj, owner, q):
    return take(m, obj, X, owner, q, lock_type=LockType.EXPLICIT)


@pytest.mark.parametrize("policy", [WaitPolicy.QUEUE, WaitPolicy.RETRY])
def test_two_sessions_two_tables(managers, policy):
    m1, m2 = managers(policy, 2)
    a1 = _explicit(m1, A, "s1", "lock-a")
    b2 = _explicit(m2, B, "s2", "lock-b")
    first = Waiter(m1, B, X, "s1", "s1-wants-b")
    time.sleep(0.3)  # s1 waits for b: no cycle yet
    assert first.is_alive()
    closed = time.monotonic()
    second = Waiter(m2, A, X, "s2", "s2-wants-a")  # closes the cycle; the youngest waiter
    second.join(5)
    assert isinstance(second.error, DeadlockError), second.error
    assert second.ended - closed < 1.5
    e = second.error
    assert e.getCondition() == "LOCK_DEADLOCK" and e.getSqlState() == "40P01"
    assert e.object_name == "default@a" and e.mode == "EXCLUSIVE"
    assert e.victim == "s2 statement s2-wants-a"
    wait = "s1 statement s1-wants-b waits for EXCLUSIVE on default@b, held EXCLUSIVE by s2"
    assert wait in str(e)
    assert first.is_alive()  # the other waits on: s2 still holds b until it unlocks
    b2.release()  # the victim's session, told, lets go
    first.join(5)
    assert first.error is None and first.held is not None
    first.held.release()
    a1.release()
    assert m1.list_locks() == []


def test_three_sessions_and_a_queued_request(managers):
    m1, m2, m3, m4 = managers(WaitPolicy.QUEUE, 4)
    held = [
        _explicit(m1, A, "s1", "la"),
        _explicit(m2, B, "s2", "lb"),
        _explicit(m3, C, "s3", "lc"),
    ]
    # a fourth session queues for b first: s1's request waits behind that queued request
    bystander = Waiter(m4, B, S, "s4", "s4-wants-b", LockType.IMPLICIT)
    time.sleep(0.2)
    w1 = Waiter(m1, B, X, "s1", "s1-wants-b")
    time.sleep(0.2)
    w2 = Waiter(m2, C, X, "s2", "s2-wants-c")
    time.sleep(0.2)
    assert all(w.is_alive() for w in (bystander, w1, w2))
    closed = time.monotonic()
    w3 = Waiter(m3, A, X, "s3", "s3-wants-a")
    w3.join(5)
    assert isinstance(w3.error, DeadlockError), w3.error
    assert w3.ended - closed < 1.5
    assert w1.is_alive() and w2.is_alive() and bystander.is_alive()
    for h in held:
        h.release()
    for w in (bystander, w1, w2):
        w.join(5)
        assert w.error is None, w.error
        w.held.release()
    assert m1.list_locks() == []


def test_statements_of_one_session_in_two_threads_are_not_a_deadlock(managers):
    m1, m2 = managers(WaitPolicy.QUEUE, 2)
    b2 = _explicit(m2, B, "s2", "lb")
    a1 = take(m1, A, X, "s1", "s1-stmt-holds-a")  # implicit: ends by itself
    w1 = Waiter(m1, B, X, "s1", "s1-other-thread", LockType.IMPLICIT)
    w2 = Waiter(m2, A, X, "s2", "s2-wants-a", LockType.IMPLICIT)
    time.sleep(1.0)
    assert w1.is_alive() and w2.is_alive()  # both wait, neither was picked as a victim
    a1.release()
    w2.join(5)
    assert w2.error is None
    w2.held.release()
    b2.release()
    w1.join(5)
    assert w1.error is None
    w1.held.release()


@pytest.mark.parametrize("policy", [WaitPolicy.QUEUE, WaitPolicy.RETRY])
def test_many_sessions_without_cycles_never_see_a_deadlock(managers, policy):
    ms = managers(policy, 6)
    objs = [LockObject.of_table("default", f"t{i}") for i in range(4)]
    errors: list[BaseException] = []

    rounds = 8 if ms[0].kind == "metastore" else 20  # each lock a metastore round trip

    def worker(i: int) -> None:
        try:
            for n in range(rounds):
                # explicit locks taken in the global order and let go before the next: no cycle
                hs = [_explicit(ms[i], o, f"s{i}", f"q{i}-{n}-{o.name}") for o in objs[i % 2 :]]
                for h in reversed(hs):
                    h.release()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not [t for t in ts if t.is_alive()], "a worker still ran after 60 s"
    assert errors == [], errors
    assert ms[0].list_locks() == []
