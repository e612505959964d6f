"""Write epochs (sparklock/service/epochs.py) and ZooKeeper's foreign-write clock, without Spark.

An epoch must change whenever a writer may have committed to what a read reads, and should not
change otherwise (it would only cost a listing). The clock is checked against a real ZooKeeper:
this client's own writes (successful or refused) leave it where it is, another client's move it.
"""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from sparklock.locks.model import LockData, LockInfo, LockMode, LockType
from sparklock.locks.objects import LockObject
from sparklock.rules.facts import parse_facts
from sparklock.service.epochs import WriteEpochs

PARTS = [{"p": "1"}, {"p": "2"}, {"p": None}]


def facts():
    return parse_facts(
        {
            "currentDatabase": "db",
            "reads": [
                {"kind": "path", "path": "file:/x"},
                {
                    "kind": "table",
                    "database": "DB",
                    "table": "T",
                    "partitionColumns": ["p"],
                    "partitions": PARTS,
                },
                {"kind": "table", "table": "flat", "partitionColumns": []},
            ],
        }
    )


def written(epochs: WriteEpochs, *objects: tuple[LockObject, LockMode]) -> None:
    data = LockData.now("q", LockType.IMPLICIT, "", "127.0.0.1")
    epochs.written([LockInfo(obj, mode, data, "id", "owner") for obj, mode in objects])


def answer(epochs: WriteEpochs) -> dict:
    """read index -> (whole, base, {partition index: epoch})"""
    got = epochs.answer(facts(), "local")
    assert got.clock == "local"
    return {
        t.read: (t.whole, t.base, dict(zip(t.indexes, t.epochs, strict=True))) for t in got.tables
    }


def test_nothing_written_nothing_changed():
    assert answer(WriteEpochs()) == {1: (0, 0, {}), 2: (0, 0, {})}


def test_a_partition_write_changes_that_partition_and_the_whole_table_only():
    epochs = WriteEpochs()
    written(
        epochs,
        (LockObject.of_partition("db", "t", {"p": "2"}), LockMode.EXCLUSIVE),
        (LockObject.of_table("db", "t"), LockMode.SHARED),  # ancestors: SHARED, not writes
        (LockObject.of_database("db"), LockMode.SHARED),
    )
    assert answer(epochs) == {1: (1, 0, {1: 1}), 2: (0, 0, {})}
    # the default partition (null) is the same object the lock names
    written(epochs, (LockObject.of_partition("db", "t", {"p": None}), LockMode.EXCLUSIVE))
    assert answer(epochs)[1] == (2, 0, {1: 1, 2: 1})


def test_table_database_and_facet_writes():
    epochs = WriteEpochs()
    written(epochs, (LockObject.of_table("db", "t"), LockMode.EXCLUSIVE))
    assert answer(epochs)[1] == (1, 1, {})
    written(epochs, (LockObject.table_writers("db", "t"), LockMode.EXCLUSIVE))
    assert answer(epochs)[1] == (2, 1, {})  # a writer somewhere in the table
    written(epochs, (LockObject.of_database("db"), LockMode.EXCLUSIVE))
    assert answer(epochs) == {1: (3, 2, {}), 2: (1, 1, {})}
    written(epochs, (LockObject.of_table("other", "t"), LockMode.EXCLUSIVE))
    assert answer(epochs) == {1: (3, 2, {}), 2: (1, 1, {})}


def test_each_write_counts_and_a_prefix_write_covers_the_partitions_below_it():
    epochs = WriteEpochs()
    written(epochs, (LockObject.of_partition("db", "t", {"p": "1"}), LockMode.EXCLUSIVE))
    written(epochs, (LockObject.of_partition("db", "t", {"p": "1"}), LockMode.EXCLUSIVE))
    assert answer(epochs)[1] == (2, 0, {0: 2})
    two_levels = parse_facts(
        {
            "currentDatabase": "db",
            "reads": [
                {
                    "kind": "table",
                    "table": "u",
                    "partitionColumns": ["p", "q"],
                    "partitions": [{"p": "a", "q": "1"}, {"p": "b", "q": "1"}],
                }
            ],
        }
    )
    written(epochs, (LockObject.of_partition("db", "u", {"p": "a"}), LockMode.EXCLUSIVE))
    (table,) = epochs.answer(two_levels, None).tables
    assert (table.whole, table.base, table.indexes, table.epochs) == (1, 0, [0], [1])


# -- the ZooKeeper clock ---------------------------------------------------------------------------
@pytest.fixture
def client(zk_server):
    from sparklock.managers.zookeeper.wire.clock import clock_of

    c = KazooClient(hosts=zk_server.address)
    c.start(timeout=15)
    clock_of(c)
    yield c
    c.stop()
    c.close()


@pytest.mark.zookeeper
def test_the_clock_moves_only_with_other_clients_writes(client, zk, zk_namespace):
    from sparklock.managers.zookeeper.wire.clock import clock_of

    clock = clock_of(client)
    root = f"/{zk_namespace}"
    client.create(root)
    start = clock.reading()
    assert start is not None
    client.create(f"{root}/a", ephemeral=True)
    tx = client.transaction()
    tx.create(f"{root}/b")
    tx.delete(f"{root}/b")
    tx.commit()
    with pytest.raises(NodeExistsError):
        client.create(f"{root}/a")  # refused, yet it took a zxid: still ours
    client.get_children(root)  # reads take none
    assert clock.reading() == start
    zk.create(f"{root}/foreign")  # another client's write
    client.get_children(root)  # the next answer tells this client the newest zxid
    moved = clock.reading()
    assert moved is not None and moved != start
    client.delete(f"{root}/a")
    assert clock.reading() == moved


@pytest.mark.zookeeper
def test_the_clock_counts_a_managers_merged_writes(zk_server, zk, zk_namespace):
    """The manager's writes leave through its coalescing lanes (answer objects of their own):
    they are counted as ours, so locking and unlocking alone never moves the clock."""
    from sparklock.config import LockSettings
    from sparklock.locks.model import LockRequest
    from sparklock.managers.zookeeper import ZooKeeperLockManager
    from sparklock.managers.zookeeper.wire.clock import clock_of

    manager = ZooKeeperLockManager.connect(zk_server.address, zk_namespace, settings=LockSettings())
    try:
        clock = clock_of(manager.transport.client())
        partition = LockObject.of_partition("db", "t", {"p": "1"})
        manager.acquire(
            [LockRequest(partition, LockMode.SHARED)], owner="o", query_id="q0"
        ).release()
        start = clock.reading()
        assert start is not None
        for mode in (LockMode.SHARED, LockMode.EXCLUSIVE):
            manager.acquire([LockRequest(partition, mode)], owner="o", query_id="q").release()
        manager.list_locks()
        assert clock.reading() == start
        zk.create(f"/{zk_namespace}/foreign")
        manager.list_locks()  # the next answer tells the manager's client the newest zxid
        assert clock.reading() not in (None, start)
    finally:
        manager.close()
