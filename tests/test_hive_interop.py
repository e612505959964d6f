"""Wire compatibility with Hive 2.3.10's ZooKeeperHiveLockManager (the real one, pyspark jars).

One harness JVM per module drives Hive's manager against the session's real ZooKeeper; every test
switches it to a fresh namespace. The znode tree is read with kazoo, independently of both sides.
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from sparklock.config import LockSettings, SparkLockConfig
from sparklock.errors import LockConflictError, NotLockedError
from sparklock.locks.model import LockData, LockMode, LockRequest, LockType, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper.settings import ZooKeeperSettings
from tests.support.hive_harness import HiveLockHarness, build_harness, missing_requirements
from tests.support.zk_tree import inspecting, is_lock, relative, znodes

pytestmark = [pytest.mark.hive_interop, pytest.mark.zookeeper]

_missing = missing_requirements()
if _missing:
    pytest.skip(f"Hive harness unavailable: {_missing}", allow_module_level=True)

import kazoo.client  # noqa: E402,F401 - a dependency: without it these tests fail

# queryId:lockTime:IMPLICIT|EXPLICIT:queryStr:clientIp, then sparklock's own fields (``:s=<owner>``
# and the like), which Hive's parser ignores
DATA_RE = re.compile(
    r"^(?P<qid>[^:]*):(?P<time>\d{13}):(?P<type>IMPLICIT|EXPLICIT):(?P<q>[^:]*):(?P<ip>[^:]+)"
    r"(?P<extra>(?::[a-z]=[^:]*)*)$"
)


@pytest.fixture(scope="module")
def hive_build():
    return build_harness()


@pytest.fixture(scope="module")
def hive_jvm(zk_server, hive_build):
    with HiveLockHarness(zk_server.address, "sparklock_hive_idle", build_dir=hive_build) as h:
        yield h


@pytest.fixture
def hive(hive_jvm, zk_namespace):
    hive_jvm.use_namespace(zk_namespace)
    hive_jvm.query("hive_query_1", "select 1")
    yield hive_jvm
    hive_jvm.unlock_all()


@pytest.fixture(scope="module")
def kz(zk_server):
    with inspecting(zk_server.address, timeout=15) as client:
        yield client


def tree(kz, root: str) -> dict[str, tuple[bytes, bool]]:
    """Every znode below ``root``, parents first: relative path -> (data, ephemeral)."""
    nodes = znodes(kz, root)
    return {
        relative(p, root): (data, stat.ephemeralOwner != 0) for p, (data, stat) in nodes.items()
    }


def lock_nodes(nodes: dict[str, tuple[bytes, bool]]) -> dict[str, tuple[bytes, bool]]:
    return {p: v for p, v in nodes.items() if is_lock(p)}


# ---------------------------------------------------------------------------------------------
# Hive alone: the layout sparklock must reproduce, as the real Hive 2.3.10 writes it.
# ---------------------------------------------------------------------------------------------


def test_hive_single_lock_layout_and_cleanup(hive, kz, zk_namespace):
    root = f"/{zk_namespace}"
    hive.query("hive_q_single", "insert overwrite table t partition (p=1) select 1")
    answer = hive.lock("default@t@p=1", "EXCLUSIVE")
    assert answer.granted
    assert answer.detail == f"{root}/default/t/p=1/LOCK-EXCLUSIVE-0000000000"
    assert kz.get(root)[0] == b""

    nodes = tree(kz, root)
    assert list(nodes) == [
        "default",
        "default/t",
        "default/t/p=1",
        "default/t/p=1/LOCK-EXCLUSIVE-0000000000",
    ]
    for obj in ("default", "default/t", "default/t/p=1"):
        assert nodes[obj] == (b"", False), obj  # persistent, empty
    data, ephemeral = nodes["default/t/p=1/LOCK-EXCLUSIVE-0000000000"]
    assert ephemeral  # implicit locks die with the session
    m = DATA_RE.match(data.decode())
    assert m, data
    assert m["qid"] == "hive_q_single"
    assert m["type"] == "IMPLICIT"
    assert m["q"] == "insert overwrite table t partition (p=1) select 1"

    assert hive.unlock("default@t@p=1") == 1
    # Hive deletes the lock node and the now-empty object node; the parents stay.
    assert list(tree(kz, root)) == ["default", "default/t"]


def test_hive_list_lock_layout(hive, kz, zk_namespace):
    """Hive's statement path: the list API (db S, table S, partition X), sorted by name."""
    root = f"/{zk_namespace}"
    answer = hive.lockset(
        [("default@t@p=1", "EXCLUSIVE"), ("default", "SHARED"), ("default@t", "SHARED")]
    )
    assert answer.granted and answer.detail == "3"
    nodes = tree(kz, root)
    assert lock_nodes(nodes).keys() == {
        "default/LOCK-SHARED-0000000000",
        "default/t/LOCK-SHARED-0000000000",
        "default/t/p=1/LOCK-EXCLUSIVE-0000000000",
    }
    assert all(ephemeral for _, ephemeral in lock_nodes(nodes).values())
    assert hive.unlock_all() == 3
    assert list(tree(kz, root)) == []  # every object node emptied and removed


def test_hive_explicit_lock_is_persistent(hive, kz, zk_namespace):
    root = f"/{zk_namespace}"
    hive.query("hive_q_explicit", "LOCK TABLE t EXCLUSIVE")
    assert hive.lock("default@t", "EXCLUSIVE", "EXPLICIT").granted
    data, stat = kz.get(f"{root}/default/t/LOCK-EXCLUSIVE-0000000000")
    assert stat.ephemeralOwner == 0  # explicit locks outlive the session until UNLOCK
    m = DATA_RE.match(data.decode())
    assert m and m["type"] == "EXPLICIT" and m["q"] == "LOCK TABLE t EXCLUSIVE"
    # UNLOCK TABLE removes it whoever holds it; a second UNLOCK finds nothing.
    assert hive.unlock_any("default@t") == 1
    assert hive.unlock_any("default@t") is None


def test_hive_grant_rule_and_show(hive):
    hive.query("hive_q_rule", "select * from t")
    assert hive.lock("default@t", "SHARED").granted
    assert hive.lock("default@t", "SHARED").granted
    assert hive.lock("default@t", "EXCLUSIVE").refused
    assert hive.lock("default", "SHARED").granted
    # The manager checks nothing up or down the tree: a partition X beside a table S is granted.
    assert hive.lock("default@t@p=1", "EXCLUSIVE").granted
    rows = hive.show()
    # getLocks leaves out database locks (it skips objects with fewer than two path names).
    assert sorted((r.name, r.mode) for r in rows) == [
        ("default@t", "SHARED"),
        ("default@t", "SHARED"),
        ("default@t@p=1", "EXCLUSIVE"),
    ]
    assert {(r.query_id, r.lock_mode, r.query_string) for r in rows} == {
        ("hive_q_rule", "IMPLICIT", "select * from t")
    }
    assert [r.name for r in hive.show("default@t@p=1")] == ["default@t@p=1"]


# ---------------------------------------------------------------------------------------------
# The lock data format, both ways (sparklock's LockData against Hive's HiveLockObjectData).
# ---------------------------------------------------------------------------------------------


def test_sparklock_decodes_hive_lock_data(hive, kz, zk_namespace):
    hive.query("hive_q_data", "  insert into t values ('a:b')  ")
    before = int(time.time() * 1000)
    path = hive.lock("default@t", "SHARED").detail
    after = int(time.time() * 1000)
    data = LockData.decode(kz.get(path)[0])
    # Hive strips ':' from every field and trims the query string.
    assert data.query_id == "hive_q_data"
    assert data.lock_type is LockType.IMPLICIT
    assert data.query_string == "insert into t values ('ab')"
    assert before <= data.lock_time_ms <= after
    assert data.client == hive.show("default@t")[0].client_ip


def test_hive_parses_sparklock_lock_data(hive, kz, zk_namespace):
    """Nodes written in sparklock's format (LockData.encode) list and block in Hive."""
    root = f"/{zk_namespace}"
    stored = LockData.now("spark_q:1", LockType.EXPLICIT, "LOCK TABLE t\n  SHARED", "10.9.8.7")
    kz.ensure_path(f"{root}/default/t")
    node = kz.create(f"{root}/default/t/LOCK-SHARED-", stored.encode(), sequence=True)
    assert node.endswith("/LOCK-SHARED-0000000000")
    empty = LockData.now("spark_q2", LockType.IMPLICIT, "", "10.9.8.7")
    kz.create(f"{root}/default/t/LOCK-EXCLUSIVE-", empty.encode(), ephemeral=True, sequence=True)

    rows = {r.mode: r for r in hive.show()}
    assert rows.keys() == {"SHARED", "EXCLUSIVE"}
    shared, exclusive = rows["SHARED"], rows["EXCLUSIVE"]
    assert (shared.name, shared.query_id, shared.lock_mode) == ("default@t", "spark_q1", "EXPLICIT")
    assert shared.query_string == "LOCK TABLE t SHARED"
    assert shared.lock_time == str(stored.lock_time_ms)
    assert (exclusive.query_id, exclusive.lock_mode, exclusive.query_string) == (
        "spark_q2",
        "IMPLICIT",
        "",
    )
    # Surprise: Hive's getLocks overwrites the client of every lock it lists with its own address.
    assert shared.client_ip == exclusive.client_ip != "10.9.8.7"
    # Hive splits the data with String.split(":"), which drops trailing empty fields: with both
    # the query string and the client empty it cannot read the data at all (so sparklock must
    # always write a client). The lock is still listed, without data.
    blank = LockData.now("spark_q3", LockType.IMPLICIT, "", "")
    kz.create(f"{root}/default/u/LOCK-SHARED-", blank.encode(), makepath=True, sequence=True)
    (row,) = hive.show("default@u")
    assert (row.name, row.mode, row.query_id, row.lock_mode) == ("default@u", "SHARED", None, None)
    # And Hive's grant rule counts the foreign nodes.
    assert hive.lock("default@t", "SHARED").refused
    assert hive.lock("default@t@p=1", "EXCLUSIVE").granted  # no hierarchy check in the manager


# ---------------------------------------------------------------------------------------------
# sparklock's ZooKeeper manager and Hive's, on one ZooKeeper namespace.
# ---------------------------------------------------------------------------------------------

DB = LockObject.of_database("default")
TABLE = LockObject.of_table("default", "t")
PART = LockObject.of_partition("default", "t", {"p": "1"})


def make_spark_manager(
    zk_server, namespace: str, wait_policy: WaitPolicy = WaitPolicy.RETRY, session_timeout=30.0
):
    zookeeper = pytest.importorskip(
        "sparklock.managers.zookeeper", reason="sparklock's ZooKeeper manager not written yet"
    )
    config = SparkLockConfig(
        manager="zookeeper",
        backend=ZooKeeperSettings(
            quorum=zk_server.address, namespace=namespace, session_timeout=session_timeout
        ),
        lock=LockSettings(num_retries=1, retry_interval=0.05, wait_policy=wait_policy),
    )
    return zookeeper.ZooKeeperLockManager(config)


@pytest.fixture
def spark_manager(zk_server, zk_namespace):
    """sparklock's ZooKeeper lock manager on the test's namespace (the Spark side of the pair)."""
    manager = make_spark_manager(zk_server, zk_namespace)
    yield manager
    manager.close()


def spark_lock(manager, *requests, query_id="spark_q", query="", lock_type=LockType.IMPLICIT):
    return manager.acquire(
        [LockRequest(obj, LockMode(mode)) for obj, mode in requests],
        owner=f"owner-{query_id}",
        query_id=query_id,
        query_string=query,
        lock_type=lock_type,
    )


def masked(nodes: dict[str, tuple[bytes, bool]]) -> dict[str, tuple[str, bool]]:
    """The tree with each lock's time and client masked and sparklock's extra fields left out (the
    rest must be byte-identical)."""
    out = {}
    for path, (data, ephemeral) in nodes.items():
        text = data.decode("utf-8")
        m = DATA_RE.match(text)
        if m:
            text = f"{m['qid']}:<time>:{m['type']}:{m['q']}:<client>"
        out[path] = (text, ephemeral)
    return out


@pytest.mark.parametrize("wait_policy", [WaitPolicy.RETRY, WaitPolicy.QUEUE])
@pytest.mark.parametrize("hive_type", ["IMPLICIT", "EXPLICIT"])
def test_hive_exclusive_refuses_sparklock(
    hive, kz, zk_server, zk_namespace, hive_type, wait_policy
):
    root = f"/{zk_namespace}"
    hive.query("hive_q_x", "INSERT OVERWRITE TABLE t SELECT 1")
    assert hive.lock("default@t", "EXCLUSIVE", hive_type).granted
    hive_tree = tree(kz, root)
    hive_client = hive.show()[0].client_ip
    manager = make_spark_manager(zk_server, zk_namespace, wait_policy)
    try:
        for requests in ([(TABLE, "SHARED")], [(PART, "EXCLUSIVE")]):
            with pytest.raises(LockConflictError) as info:
                spark_lock(manager, *requests, query_id="spark_q_read", query="select * from t")
            err = info.value
            assert err.code == "LOCK_CONFLICT"
            assert (err.object_name, err.mode) == ("default@t", "SHARED")
            assert [(h.object, h.mode, h.query_id, h.client) for h in err.holders] == [
                ("default@t", "EXCLUSIVE", "hive_q_x", hive_client)
            ]
            assert "default@t" in str(err) and "hive_q_x" in str(err) and hive_client in str(err)
            assert tree(kz, root) == hive_tree  # refused: nothing of sparklock's stays behind

        (info,) = manager.list_locks()
        assert (info.name, info.mode) == ("default@t", LockMode.EXCLUSIVE)
        assert info.data.lock_type is LockType(hive_type)
        assert (info.data.query_id, info.data.query_string, info.data.client) == (
            "hive_q_x",
            "INSERT OVERWRITE TABLE t SELECT 1",
            hive_client,
        )
        assert manager.list_locks(DB) == [info]
        assert manager.list_locks(PART) == []
    finally:
        manager.close()


def test_sparklock_partition_exclusive_refuses_hive(hive, spark_manager, kz, zk_namespace):
    query = "INSERT OVERWRITE TABLE t PARTITION (p=1) SELECT 1"
    held = spark_lock(spark_manager, (PART, "EXCLUSIVE"), query_id="spark_q_write", query=query)
    assert [(i.name, i.mode) for i in held.locks] == [
        ("default", LockMode.SHARED),
        ("default@t", LockMode.SHARED),
        ("default@t@p=1", LockMode.EXCLUSIVE),
    ]
    root = f"/{zk_namespace}"
    assert lock_nodes(tree(kz, root)).keys() == {
        "default/LOCK-SHARED-0000000000",
        "default/t/LOCK-SHARED-0000000000",
        "default/t/p=1/LOCK-EXCLUSIVE-0000000000",
    }

    hive.query("hive_q_other", "select 1")
    assert hive.lock("default@t@p=1", "EXCLUSIVE").refused
    assert hive.lock("default@t@p=1", "SHARED").refused
    assert hive.lock("default@t", "EXCLUSIVE").refused  # meets sparklock's table S
    assert hive.lockset(
        {"default": "SHARED", "default@t": "SHARED", "default@t@p=1": "SHARED"}
    ).refused
    assert hive.lock("default@t@p=2", "EXCLUSIVE").granted  # another partition is free
    assert hive.unlock("default@t@p=2") == 1

    rows = sorted(hive.show(), key=lambda r: r.name)
    assert [(r.name, r.mode) for r in rows] == [  # no database lock: Hive never lists those
        ("default@t", "SHARED"),
        ("default@t@p=1", "EXCLUSIVE"),
    ]
    data = held.locks[0].data
    for r in rows:
        assert (r.query_id, r.lock_mode, r.query_string) == ("spark_q_write", "IMPLICIT", query)
        assert r.lock_time == str(data.lock_time_ms)
    stored = LockData.decode(kz.get(rows[1].path)[0])
    assert stored.client == spark_manager.client_address

    spark_manager.release(held)
    assert hive.show() == []
    assert spark_manager.list_locks() == []
    assert hive.lock("default@t", "EXCLUSIVE").granted


def test_explicit_locks_each_side_unlocks_the_others(hive, spark_manager, kz, zk_namespace):
    held = spark_lock(
        spark_manager,
        (TABLE, "EXCLUSIVE"),
        query_id="spark_q_lt",
        query="LOCK TABLE t EXCLUSIVE",
        lock_type=LockType.EXPLICIT,
    )
    assert [(i.name, i.mode) for i in held.locks] == [("default@t", LockMode.EXCLUSIVE)]
    (row,) = hive.show()
    assert (row.name, row.mode, row.lock_mode) == ("default@t", "EXCLUSIVE", "EXPLICIT")
    assert kz.get(row.path)[1].ephemeralOwner == 0  # explicit: persistent, as Hive's
    assert hive.lock("default@t", "SHARED").refused
    # Hive's UNLOCK TABLE removes sparklock's explicit lock (whoever holds it).
    assert hive.unlock_any("default@t") == 1
    assert spark_manager.list_locks() == []
    spark_manager.release(held)  # releasing what is already gone is harmless

    # And the other way: sparklock's UNLOCK TABLE removes Hive's LOCK TABLE.
    hive.query("hive_q_lt", "LOCK TABLE t SHARED")
    assert hive.lock("default@t", "SHARED", "EXPLICIT").granted
    assert hive.lock("default@t", "SHARED", "EXPLICIT").granted
    removed = spark_manager.unlock(TABLE)
    assert [(i.name, i.mode, i.data.query_id, i.data.lock_type) for i in removed] == [
        ("default@t", LockMode.SHARED, "hive_q_lt", LockType.EXPLICIT)
    ] * 2
    assert hive.show() == []
    with pytest.raises(NotLockedError):
        spark_manager.unlock(TABLE)
    assert list(tree(kz, f"/{zk_namespace}")) == ["default"]  # as Hive's UNLOCK leaves it


def test_shared_shared_both_ways_same_layout_as_hive(hive, zk_server, kz, zk_namespace):
    """Hive, sparklock, Hive take read locks: each step's tree is what three Hive statements make.

    The reference runs the same steps with Hive in sparklock's place, in a second namespace.
    """
    read_set = {"default": "SHARED", "default@t": "SHARED"}

    def scenario(namespace: str, second_statement) -> list[dict]:
        hive.use_namespace(namespace)
        hive.query("q_read", "select * from t")
        snapshots = []
        assert hive.lockset(read_set).granted
        release_second = second_statement()  # granted beside the first statement's S locks
        snapshots.append(masked(tree(kz, f"/{namespace}")))
        third = hive.lockset(read_set)  # granted beside the second statement's S locks
        assert third.granted
        snapshots.append(masked(tree(kz, f"/{namespace}")))
        release_second()
        snapshots.append(masked(tree(kz, f"/{namespace}")))
        hive.unlock_all()
        snapshots.append(masked(tree(kz, f"/{namespace}")))
        return snapshots

    def hive_statement():
        answer = hive.lockset(read_set)
        assert answer.granted
        return lambda: hive.release(answer)

    manager = make_spark_manager(zk_server, zk_namespace)
    try:

        def spark_statement():
            held = spark_lock(
                manager, (TABLE, "SHARED"), query_id="q_read", query="select * from t"
            )
            return lambda: manager.release(held)

        mixed = scenario(zk_namespace, spark_statement)
        assert manager.list_locks() == []
        assert hive.show() == []
    finally:
        manager.close()
    reference = scenario(f"{zk_namespace}_hive_only", hive_statement)

    assert lock_nodes(mixed[0]).keys() == {
        "default/LOCK-SHARED-0000000000",
        "default/LOCK-SHARED-0000000002",
        "default/t/LOCK-SHARED-0000000000",
        "default/t/LOCK-SHARED-0000000001",
    }
    for step, (ours, theirs) in enumerate(zip(mixed, reference, strict=True)):
        assert ours == theirs, f"step {step}"
    assert mixed[-1] == {}


def test_statement_lock_set_same_nodes_and_data_as_hive(hive, zk_server, kz, zk_namespace):
    """Hive's list lock of db S + table S + partition X, then sparklock's: identical trees."""
    query = "INSERT OVERWRITE TABLE t PARTITION (p=1) SELECT 1"
    hive.query("q_write", query)
    answer = hive.lockset(
        {"default": "SHARED", "default@t": "SHARED", "default@t@p=1": "EXCLUSIVE"}
    )
    assert answer.granted
    hive_tree = masked(tree(kz, f"/{zk_namespace}"))
    hive.release(answer)
    hive_after = masked(tree(kz, f"/{zk_namespace}"))

    namespace = f"{zk_namespace}_spark"
    manager = make_spark_manager(zk_server, namespace)
    try:
        held = spark_lock(manager, (PART, "EXCLUSIVE"), query_id="q_write", query=query)
        spark_tree = masked(tree(kz, f"/{namespace}"))
        manager.release(held)
        spark_after = masked(tree(kz, f"/{namespace}"))
    finally:
        manager.close()

    assert hive_tree == {
        "default": ("", False),
        "default/LOCK-SHARED-0000000000": (f"q_write:<time>:IMPLICIT:{query}:<client>", True),
        "default/t": ("", False),
        "default/t/LOCK-SHARED-0000000000": (f"q_write:<time>:IMPLICIT:{query}:<client>", True),
        "default/t/p=1": ("", False),
        "default/t/p=1/LOCK-EXCLUSIVE-0000000000": (
            f"q_write:<time>:IMPLICIT:{query}:<client>",
            True,
        ),
    }
    assert spark_tree == hive_tree
    assert hive_after == spark_after == {}


def test_sparklock_implicit_locks_end_with_its_session(hive, zk_server, kz, zk_namespace):
    """Implicit locks are ephemeral: closing sparklock's client frees them for Hive."""
    # The process shares one client per (quorum, session timeout): an odd timeout gives this
    # manager a session of its own, which its close() ends whatever other tests left open.
    manager = make_spark_manager(zk_server, zk_namespace, session_timeout=17.25)
    try:
        spark_lock(manager, (TABLE, "EXCLUSIVE"), query_id="spark_q_gone")
        assert [(r.name, r.mode) for r in hive.show()] == [("default@t", "EXCLUSIVE")]
        assert hive.lock("default@t", "SHARED").refused
    finally:
        manager.close()
    assert hive.show() == []
    assert hive.lock("default@t", "EXCLUSIVE").granted


def test_queued_sparklock_wakes_when_hive_releases(hive, zk_server, zk_namespace):
    """sparklock's fair queue watches Hive's node: Hive's release wakes it, no polling."""
    assert hive.lock("default@t", "EXCLUSIVE").granted
    manager = make_spark_manager(zk_server, zk_namespace, WaitPolicy.QUEUE)
    settings = LockSettings(num_retries=100, retry_interval=0.1, wait_policy=WaitPolicy.QUEUE)
    got: dict[str, float] = {}

    def reader() -> None:
        held = manager.acquire(
            [LockRequest(TABLE, LockMode.SHARED)],
            owner="owner-queued",
            query_id="spark_q_queued",
            settings=settings,
        )
        got["at"] = time.monotonic()
        manager.release(held)

    try:
        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        time.sleep(0.5)
        assert "at" not in got  # still waiting behind Hive's EXCLUSIVE lock
        released = time.monotonic()
        assert hive.unlock("default@t") == 1
        thread.join(10)
        assert "at" in got
        assert got["at"] - released < 1.0
    finally:
        manager.close()


@pytest.mark.parametrize("wait_policy", [WaitPolicy.RETRY, WaitPolicy.QUEUE])
def test_a_sparklock_waiter_behind_hive_is_listed_and_hive_reads_its_data(
    hive, zk_server, kz, zk_namespace, wait_policy
):
    """A sparklock request waiting behind Hive's lock: sparklock's listing says WAITING, blocked
    by Hive's query; Hive never counts the retry policy's marker as a lock; and once granted,
    Hive parses the node data with its extra fields (agent, user, wait and grant times)."""
    hive.query("hive_q_w", "INSERT OVERWRITE TABLE t SELECT 1")
    assert hive.lock("default@t", "EXCLUSIVE").granted
    manager = make_spark_manager(zk_server, zk_namespace, wait_policy)
    # a budget (40 s) the test does not reach, even on a loaded machine
    settings = LockSettings(num_retries=200, retry_interval=0.2, wait_policy=wait_policy)
    got: dict[str, object] = {}

    def waiter() -> None:
        got["held"] = manager.acquire(
            [LockRequest(TABLE, LockMode.SHARED)],
            owner="owner-waiting",
            query_id="spark_q_wait",
            query_string="SELECT * FROM t",
            settings=settings,
            user="alice",
            agent="app-7",
        )

    thread = threading.Thread(target=waiter, daemon=True)
    try:
        thread.start()

        def waiting_rows():
            return [
                i
                for i in manager.list_locks(TABLE, waiting=True)
                if i.state.value == "WAITING" and i.data.query_id == "spark_q_wait"
            ]

        seen: list = []
        assert wait_for_true(lambda: seen.extend(waiting_rows()) or seen)
        [row] = seen
        assert row.blocked_by == ("EXCLUSIVE default@t query_id=hive_q_w",)
        shown = [(r.name, r.mode, r.query_id) for r in hive.show()]
        if wait_policy is WaitPolicy.RETRY:
            markers = [p for p in znodes(kz, f"/{zk_namespace}") if "/_sparklock-waiting/" in p]
            assert len(markers) == 1  # the waiter is visible to sparklock ...
            # ... and no lock to Hive (which lists only lock nodes: Hive's, and at most the
            # SHARED node of an attempt under way)
            assert ("default@t", "EXCLUSIVE", "hive_q_w") in shown
            assert {(name, mode) for name, mode, _ in shown} <= {
                ("default@t", "EXCLUSIVE"),
                ("default@t", "SHARED"),
            }
        else:  # a queued request is a lock node in line, as Hive's own would be
            assert ("default@t", "SHARED", "spark_q_wait") in shown
        assert hive.unlock("default@t") == 1
        thread.join(10)
        assert "held" in got
        [hive_row] = hive.show()
        assert (hive_row.name, hive_row.mode, hive_row.query_id, hive_row.lock_mode) == (
            "default@t",
            "SHARED",
            "spark_q_wait",
            "IMPLICIT",
        )
        assert hive_row.query_string == "SELECT * FROM t"
        [node] = [p for p in znodes(kz, f"/{zk_namespace}/default/t", locks_only=True)]
        data = LockData.decode(kz.get(node)[0])
        assert (data.agent, data.user) == ("app-7", "alice")
        if wait_policy is WaitPolicy.QUEUE:  # the node waited in line: granted later, says when
            assert data.acquired_ms >= data.lock_time_ms and not data.wait_since_ms
        else:  # a later attempt's node, granted at once: since when its request waited
            assert 0 < data.wait_since_ms <= data.lock_time_ms and not data.acquired_ms
        manager.release(got["held"])
    finally:
        manager.close()
    assert not [p for p in znodes(kz, f"/{zk_namespace}") if "_sparklock-waiting" in p]


def wait_for_true(predicate, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())
