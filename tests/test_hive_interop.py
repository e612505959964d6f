"""Wire compatibility with Hive 2.3.10's ZooKeeperHiveLockManager (the real one, pyspark jars).

One harness JVM per module drives Hive's manager against the session's real ZooKeeper; every test
switches it to a fresh namespace. The znode tree is read with kazoo, independently of both sides.
"""

from __future__ import annotations

import re

import pytest

from tests.support.hive_harness import HiveLockHarness, build_harness, missing_requirements

pytestmark = [pytest.mark.hive_interop, pytest.mark.zookeeper]

_missing = missing_requirements()
if _missing:
    pytest.skip(f"Hive harness unavailable: {_missing}", allow_module_level=True)

kazoo_client = pytest.importorskip("kazoo.client")

# queryId:lockTime:IMPLICIT|EXPLICIT:queryStr:clientIp
DATA_RE = re.compile(
    r"^(?P<qid>[^:]*):(?P<time>\d{13}):(?P<type>IMPLICIT|EXPLICIT):(?P<q>[^:]*):(?P<ip>[^:]+)$"
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
    client = kazoo_client.KazooClient(hosts=zk_server.address)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def tree(kz, root: str) -> dict[str, tuple[bytes, bool]]:
    """Every znode below ``root``: relative path -> (data, ephemeral)."""
    out: dict[str, tuple[bytes, bool]] = {}

    def walk(path: str) -> None:
        for child in sorted(kz.get_children(path)):
            full = f"{path}/{child}"
            data, stat = kz.get(full)
            out[full[len(root) + 1 :]] = (data, stat.ephemeralOwner != 0)
            walk(full)

    walk(root)
    return out


def lock_nodes(nodes: dict[str, tuple[bytes, bool]]) -> dict[str, tuple[bytes, bool]]:
    return {p: v for p, v in nodes.items() if p.rsplit("/", 1)[-1].startswith("LOCK-")}


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
