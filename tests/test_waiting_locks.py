"""Who waits for whom, at the manager level: WAITING rows beside granted locks, on both managers
and both wait policies, and what ZooKeeper stores for them (sparklock.locks.waiting).

Each scenario holds a lock, starts a conflicting request on a thread, reads ``list_locks`` while
it waits, then ends the wait (grant, refusal, cancellation) and reads again.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Callable

import pytest

from sparklock.config import LockSettings
from sparklock.errors import LockConflictError, NotLockedError
from sparklock.locks.model import LockData, LockInfo, LockMode, LockState, LockType, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers import AcquisitionCancelled, LockManager
from sparklock.managers.embedded import EmbeddedLockManager
from sparklock.protocol.messages import LOCK_COLUMNS, lock_rows
from tests.support.locks import take, wait_for
from tests.support.zk_tree import inspecting, znodes

S, X = LockMode.SHARED, LockMode.EXCLUSIVE
T = LockObject.of_table("default", "t")
P1 = LockObject.of_partition("default", "t", {"p": "1"})
QUEUE = LockSettings(num_retries=300, retry_interval=0.02, wait_policy=WaitPolicy.QUEUE)
RETRY = LockSettings(num_retries=300, retry_interval=0.02, wait_policy=WaitPolicy.RETRY)
POLICIES = {"queue": QUEUE, "retry": RETRY}
#: Hive 2.3's ZooKeeperHiveLockManager takes a node for a lock when its path matches these.
HIVE_LOCK_PATH = re.compile(r"^.*-(SHARED|EXCLUSIVE)-([0-9]+)$")


def _zookeeper(request, settings: LockSettings) -> LockManager:
    from sparklock.managers.zookeeper import ZooKeeperLockManager

    address = request.getfixturevalue("zk_server").address
    namespace = request.getfixturevalue("zk_namespace")
    return ZooKeeperLockManager.connect(address, namespace, settings=settings)


def _unlock_and_close(m: LockManager) -> None:
    """After a test: whatever ``m`` still holds is unlocked (a failed test leaves no lock behind
    for the next one on the shared server), then ``m`` is closed."""
    for info in m.list_locks():
        try:
            m.unlock(info.obj)
        except NotLockedError:
            pass
    m.close()


@pytest.fixture(params=["embedded", "zookeeper"])
def manager(request):
    """A manager of each kind, on the queue policy unless a request says otherwise."""
    m = EmbeddedLockManager(QUEUE) if request.param == "embedded" else _zookeeper(request, QUEUE)
    yield m
    _unlock_and_close(m)


class Waiter:
    """A request on a thread of its own; ``outcome`` is its HeldLocks or its exception."""

    def __init__(self, start: Callable[[threading.Event], object]) -> None:
        self.cancel = threading.Event()
        self.outcome: object = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(start,), daemon=True)
        self._thread.start()

    def _run(self, start: Callable[[threading.Event], object]) -> None:
        try:
            self.outcome = start(self.cancel)
        except Exception as e:  # noqa: BLE001 - the test looks at it
            self.outcome = e
        finally:
            self.done.set()

    def result(self, timeout: float = 20.0) -> object:
        assert self.done.wait(timeout), "the waiting request never ended"
        return self.outcome


def rows(m: LockManager, obj: LockObject | None = None) -> list[dict[str, str]]:
    """SHOW LOCKS EXTENDED of everything (waiting requests included) as dicts by column."""
    columns = list(LOCK_COLUMNS)
    return [
        dict(zip(columns, r, strict=True))
        for r in lock_rows(m.list_locks(obj, waiting=True), columns)
    ]


def waiting_rows(m: LockManager) -> list[dict[str, str]]:
    return [r for r in rows(m) if r["state"] == "WAITING"]


def settled(
    m: LockManager, obj: LockObject, states: list[str], timeout: float = 10.0
) -> list[dict[str, str]]:
    """The rows on ``obj`` once their states are ``states`` (a request starting to wait under
    the retry policy is briefly not listed: between its first attempt and its marker)."""
    end = time.monotonic() + timeout
    while True:
        got = rows(m, obj)
        if [r["state"] for r in got] == states or time.monotonic() > end:
            return got
        time.sleep(0.02)


def eventually(read: Callable[[], str], want: str, timeout: float = 10.0) -> str:
    """``read()`` once it returns ``want`` (else its last answer): a retry-policy waiter's
    attempts take its locks for a moment every ``retry_interval``, so a listing made during one
    counts them; between attempts only its marker is there."""
    end = time.monotonic() + timeout
    while (got := read()) != want and time.monotonic() < end:
        time.sleep(0.005)
    return got


def eventually_lines(read: Callable[[], list[str]], count: int, timeout: float = 10.0) -> list[str]:
    """``read()`` once it returns ``count`` lines (else its last answer)."""
    end = time.monotonic() + timeout
    while len(got := read()) != count and time.monotonic() < end:
        time.sleep(0.005)
    return got


def request(m: LockManager, settings: LockSettings, mode=S, obj=T, **kw) -> Waiter:
    return Waiter(
        lambda cancel: take(
            m, obj, mode, "bob", "q-bob", settings=settings, cancel=cancel, agent="app-b", **kw
        )
    )


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_waiter_is_listed_as_waiting_then_acquired(manager, policy):
    settings = POLICIES[policy]
    holder = take(manager, T, X, "alice", "q-alice", agent="app-a")
    before = int(time.time() * 1000)
    waiter = request(manager, settings)
    [held, waiting] = settled(manager, T, ["ACQUIRED", "WAITING"])  # (+ SHARED on the db)
    assert (held["name"], held["mode"], held["state"]) == ("default@t", "EXCLUSIVE", "ACQUIRED")
    assert held["acquired_at"] == held["lock_time"] and held["wait_since"] == ""
    assert held["blocked_by"] == "" and held["agent"] == "app-a"
    assert (waiting["name"], waiting["mode"], waiting["query_id"]) == (
        "default@t",
        "SHARED",
        "q-bob",
    )
    assert waiting["blocked_by"] == "EXCLUSIVE default@t query_id=q-alice"
    assert waiting["acquired_at"] == "" and int(waiting["wait_since"]) >= before - 1000
    assert waiting["agent"] == "app-b" and waiting["lock_type"] == "IMPLICIT"
    if policy == "queue":  # a queued request is a lock entry, listed without ``waiting`` too
        assert [i.state for i in manager.list_locks(T)] == [LockState.ACQUIRED, LockState.WAITING]

    holder.release()
    got = waiter.result()
    assert not isinstance(got, Exception), got
    [granted] = rows(manager, T)
    assert (granted["query_id"], granted["state"], granted["blocked_by"]) == (
        "q-bob",
        "ACQUIRED",
        "",
    )
    assert int(granted["wait_since"]) <= int(granted["acquired_at"]), (granted, waiting)
    assert int(granted["wait_since"]) <= int(waiting["wait_since"]) + 1000
    got.release()
    assert rows(manager) == []


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_no_waiting_row_after_a_refusal(manager, policy):
    holder = take(manager, T, X, "alice", "q-alice")
    budget = LockSettings(num_retries=20, retry_interval=0.05, wait_policy=WaitPolicy(policy))
    waiter = request(manager, budget)
    assert wait_for(lambda: waiting_rows(manager))
    assert isinstance(waiter.result(), LockConflictError)
    assert [r["state"] for r in rows(manager, T)] == ["ACQUIRED"]
    assert waiting_rows(manager) == []
    holder.release()


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_no_waiting_row_after_a_cancellation(manager, policy):
    holder = take(manager, T, X, "alice", "q-alice")
    waiter = request(manager, POLICIES[policy])
    assert wait_for(lambda: waiting_rows(manager))
    waiter.cancel.set()
    assert isinstance(waiter.result(), AcquisitionCancelled)
    assert [r["state"] for r in rows(manager, T)] == ["ACQUIRED"]
    assert waiting_rows(manager) == []
    holder.release()


def test_a_queue_waits_in_line_each_blocked_by_whoever_is_ahead(manager):
    """X held; S, then X queued: the S waits for the holder, the X for both."""
    holder = take(manager, T, S, "alice", "q-alice")
    writer = Waiter(lambda c: take(manager, T, X, "bob", "q-bob", settings=QUEUE, cancel=c))
    settled(manager, T, ["ACQUIRED", "WAITING"])
    reader = Waiter(lambda c: take(manager, T, S, "carol", "q-carol", settings=QUEUE, cancel=c))
    by_query = {r["query_id"]: r for r in settled(manager, T, ["ACQUIRED", "WAITING", "WAITING"])}
    assert by_query["q-alice"]["state"] == "ACQUIRED"
    assert by_query["q-bob"]["blocked_by"] == "SHARED default@t query_id=q-alice"
    # fair: the reader does not overtake the writer queued before it
    assert by_query["q-carol"]["blocked_by"] == "EXCLUSIVE default@t query_id=q-bob"
    writer.cancel.set()
    assert isinstance(writer.result(), AcquisitionCancelled)
    reader.result().release()
    holder.release()


def test_a_sessions_own_explicit_lock_does_not_make_its_statement_wait(manager):
    explicit = take(manager, T, X, "alice", "q-lock", lock_type=LockType.EXPLICIT)
    statement = take(manager, T, S, "alice", "q-stmt")
    assert [(r["query_id"], r["state"]) for r in rows(manager, T)] == [
        ("q-lock", "ACQUIRED"),
        ("q-stmt", "ACQUIRED"),
    ]
    statement.release()
    explicit.release()


# -- ZooKeeper: what is stored, and what another process sees --------------------------------
@pytest.fixture
def zk_manager(request):
    made: list[LockManager] = []

    def make(settings: LockSettings = QUEUE) -> LockManager:
        m = _zookeeper(request, settings)
        made.append(m)
        return m

    yield make
    for m in made:
        _unlock_and_close(m)


def foreign_view(m) -> list[LockInfo]:
    """What a reader in another process sees: the same tree, no knowledge of this one's owners."""
    from sparklock.managers.zookeeper.recipe.tree import TreeReader
    from sparklock.managers.zookeeper.wire.owners import OwnerRegistry

    return TreeReader(m.transport, OwnerRegistry(), m.root).list_locks(None, True)


def test_zookeeper_a_lock_granted_past_its_owners_explicit_lock_says_so(zk_manager):
    m = zk_manager()
    explicit = take(m, T, X, "alice", "q-lock", lock_type=LockType.EXPLICIT)
    statement = take(m, T, S, "alice", "q-stmt")
    assert [(i.data.query_id, i.state) for i in foreign_view(m) if i.obj == T] == [
        ("q-lock", LockState.ACQUIRED),
        ("q-stmt", LockState.ACQUIRED),
    ]
    statement.release()
    explicit.release()


def test_zookeeper_uncontended_locks_carry_no_times(zk_manager, zk_server, zk_namespace):
    m = zk_manager()
    held = take(m, P1, X, "alice", "q-alice", agent="app-a")
    with inspecting(zk_server.address) as zk:
        datas = [d for p, (d, _) in znodes(zk, "/" + zk_namespace, locks_only=True).items()]
    assert len(datas) == 3  # db, table, partition
    for raw in datas:
        data = LockData.decode(raw)
        assert (data.agent, data.wait_since_ms, data.acquired_ms) == ("app-a", 0, 0)
        assert raw.decode().split(":")[5] == "g=app-a"  # after Hive's five fields
    held.release()


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_zookeeper_another_process_sees_the_waiter(zk_manager, zk_server, zk_namespace, policy):
    """Two managers on separate ZooKeeper sessions (as two drivers): the waiter's own process
    and a foreign reader list the same WAITING row; its marker (retry) is ephemeral, outside
    the object nodes and no lock to Hive; nothing remains once it is granted."""
    holder_side, waiter_side = zk_manager(), zk_manager(POLICIES[policy])
    holder = take(holder_side, P1, X, "alice", "q-alice")
    waiter = request(waiter_side, POLICIES[policy], mode=X, obj=P1)
    [seen] = [
        r for r in settled(holder_side, P1, ["ACQUIRED", "WAITING"]) if r["query_id"] == "q-bob"
    ]
    assert (seen["name"], seen["query_id"], seen["agent"]) == ("default@t@p=1", "q-bob", "app-b")
    assert seen["blocked_by"] == "EXCLUSIVE default@t@p=1 query_id=q-alice"
    with inspecting(zk_server.address) as zk:

        def markers() -> dict:
            tree = znodes(zk, "/" + zk_namespace)
            assert not [p for p in tree if "_sparklock-waiting" in p and HIVE_LOCK_PATH.match(p)]
            return {p: stat for p, (_, stat) in tree.items() if "/_sparklock-waiting/" in p}

        if policy == "retry":
            # the row seen may have been the first attempt's node, gone before its marker came
            assert wait_for(markers, 10), "no marker while the request waited"
            [(path, stat)] = markers().items()
            assert stat.ephemeralOwner  # gone with the waiting driver's session
            assert path.startswith(f"/{zk_namespace}/_sparklock-waiting/WAIT-")
        else:
            assert markers() == {}  # a queued request is its lock node
    holder.release()
    got = waiter.result()
    assert not isinstance(got, Exception), got
    assert [r["state"] for r in rows(holder_side)] == ["ACQUIRED"] * 3  # db, t, p=1
    got.release()
    with inspecting(zk_server.address) as zk:
        assert not [p for p in znodes(zk, "/" + zk_namespace) if "_sparklock-waiting" in p]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_cli_locks_waiting_lists_only_the_waiters(zk_manager, zk_server, zk_namespace, policy):
    import io

    from sparklock.cli import main

    def cli(*args: str) -> list[str]:
        out = io.StringIO()
        argv = ["locks", *args, "--quorum", zk_server.address, "--namespace", zk_namespace]
        assert main(argv, out=out) == 0
        return out.getvalue().splitlines()

    holder_side, waiter_side = zk_manager(), zk_manager(POLICIES[policy])
    holder = take(holder_side, T, X, "alice", "q-alice")
    waiter = request(waiter_side, POLICIES[policy], mode=X)
    settled(holder_side, T, ["ACQUIRED", "WAITING"])
    # (a listing made during one of the retry waiter's attempts finds its locks, not its marker)
    header, row, footer = eventually_lines(lambda: cli("--waiting"), 3)
    assert row.startswith("default@t ") and "q-bob" in row
    assert row[header.index("state") :].split()[:1] == ["WAITING"]
    assert "EXCLUSIVE default@t query_id=q-alice" in row
    assert footer == "(1 lock, 1 waiting)"
    # alice's db and table, bob waiting on t (and, queued, holding his SHARED on the db)
    total = 4 if policy == "queue" else 3
    listed = f"({total} locks, 1 waiting)"
    assert eventually(lambda: cli()[-1], listed) == listed
    waiter.cancel.set()
    assert isinstance(waiter.result(), AcquisitionCancelled)
    assert [line.split() for line in cli("--waiting")] == [header.split(), ["(0", "locks)"]]
    holder.release()


# -- the node data: extra fields after Hive's five ----------------------------------------------
def test_lock_data_extra_fields_round_trip_and_leave_hives_fields_alone():
    data = LockData("q1", 1700000000000, LockType.IMPLICIT, "SELECT 1", "10.0.0.5", "alice")
    data = dataclasses.replace(data, agent="thrift/abc", wait_since_ms=17, acquired_ms=42)
    raw = data.encode()
    assert raw.decode().split(":") == [
        "q1",
        "1700000000000",
        "IMPLICIT",
        "SELECT 1",
        "10.0.0.5",
        "g=thrift/abc",
        "u=alice",
        "w=17",
        "a=42",
    ]
    assert LockData.decode(raw) == data
    # a peer's client with colons (IPv6) is still the client, and no field is taken for an extra
    hive = LockData.decode(b"hive_q:1700000000000:EXPLICIT:select 1:fe80::1")
    assert (hive.client, hive.user, hive.agent, hive.acquired_ms) == ("fe80::1", "", "", 0)
