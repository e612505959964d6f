"""The metastore's wait-for graph from SHOW LOCKS rows, and what a request's agent info carries
(pure: rows as the metastore's Thrift structs, no metastore; the real one is
``test_metastore_deadlocks``)."""

from __future__ import annotations

from sparklock.locks.model import LockData, LockType
from sparklock.locks.wait_for import runs
from sparklock.managers.metastore import agent_info, wait_graph, wire
from sparklock.managers.metastore.agent_info import MAX_AGENT_INFO

W, A = wire.WAITING, wire.ACQUIRED
R, X = wire.SHARED_READ, wire.EXCLUSIVE


def row(lockid, table, state, kind=X, agent="", txnid=0, part=None, blocked=None, internal=1):
    return wire.ShowLocksResponseElement(
        lockid=lockid,
        lockIdInternal=internal,
        dbname="db",
        tablename=table,
        partname=part,
        state=state,
        type=kind,
        txnid=txnid,
        agentInfo=agent,
        blockedByExtId=blocked,
        blockedByIntId=1 if blocked else None,
    )


def spark(q: str, owner: str, explicit: bool = True) -> str:
    kind = LockType.EXPLICIT if explicit else LockType.IMPLICIT
    return agent_info.encode(LockData(q, 0, kind, agent="app-1"), owner)


def test_agent_info_round_trips_and_fits_the_column():
    text = spark("spark_20261128_lock_1", "s1")
    assert text == "spark_20261128_lock_1:s=s1:l=E:g=app-1"
    back = agent_info.decode(text)
    assert (back.query_id, back.owner, back.lock_type, back.agent) == (
        "spark_20261128_lock_1",
        "s1",
        LockType.EXPLICIT,
        "app-1",
    )
    assert agent_info.decode("hive_20261128_abc") == agent_info.AgentInfo("hive_20261128_abc")
    long_owner = "x" * 200
    text = agent_info.encode(LockData("q" * 60, 0, LockType.IMPLICIT, agent="a" * 90), long_owner)
    assert len(text) <= MAX_AGENT_INFO and ":s=#" in text
    assert agent_info.decode(text).owner == text.split(":s=")[1].split(":")[0]


def test_the_crossed_lock_tables_are_a_cycle_and_the_younger_request_its_victim():
    rows = [
        row(1, "a", A, agent=spark("la", "s1")),
        row(2, "b", A, agent=spark("lb", "s2")),
        row(3, "b", W, agent=spark("s1-wants-b", "s1"), blocked=2),
        row(4, "a", W, agent=spark("s2-wants-a", "s2"), blocked=1),
    ]
    assert wait_graph.victim_cycle(rows, 3) is None  # the older waiter waits on
    found = wait_graph.victim_cycle(rows, 4)
    assert found is not None and found.victim == "s2 statement s2-wants-a"
    text = found.describe()
    assert "s1 statement s1-wants-b waits for EXCLUSIVE on db@b, held EXCLUSIVE by s2" in text
    edge = wait_graph.refused_edge(found)
    assert (edge.obj, edge.waiter_mode.value) == ("db@a", "EXCLUSIVE")


def test_a_chain_a_shared_pair_and_one_session_s_own_locks_are_no_cycle():
    chain = [
        row(1, "a", A, agent=spark("la", "s1")),
        row(2, "a", W, agent=spark("s2-wants-a", "s2")),
        row(3, "a", W, agent=spark("s3-wants-a", "s3")),
    ]
    assert wait_graph.victim_cycle(chain, 3) is None
    # a statement behind its own session's SHARED LOCK TABLE (the metastore knows no owners)
    own = [
        row(1, "a", A, kind=R, agent=spark("la", "s1")),
        row(2, "a", W, agent=spark("write-a", "s1", explicit=False)),
    ]
    assert wait_graph.edges(own) == [runs("s1", "write-a", 2)]
    readers = [
        row(1, "a", A, kind=R, agent=spark("r1", "s1", explicit=False)),
        row(2, "a", A, kind=R, agent=spark("r2", "s2", explicit=False)),
    ]
    assert wait_graph.edges(readers) == []


def test_a_queued_request_ahead_is_waited_for_even_where_the_metastore_names_another():
    rows = [
        row(1, "a", A, agent=spark("la", "s1")),
        row(2, "b", A, agent=spark("lb", "s2")),
        row(3, "b", W, kind=R, agent=spark("s4-reads-b", "s4", explicit=False), blocked=2),
        row(4, "b", W, agent=spark("s1-wants-b", "s1"), blocked=2),  # behind s4's too
        row(5, "a", W, agent=spark("s2-wants-a", "s2"), blocked=1),
    ]
    holders = {e.holder for e in wait_graph.edges(rows) if e.waiter.endswith("s1-wants-b")}
    assert holders == {"s2", "s4 statement s4-reads-b"}
    assert wait_graph.victim_cycle(rows, 5) is not None


def test_a_hive_transaction_in_the_cycle_is_never_the_victim():
    rows = [
        row(1, "a", A, agent="hive_q1", txnid=7),
        row(2, "b", A, agent=spark("lb", "s2")),
        row(3, "a", W, agent=spark("s2-wants-a", "s2"), blocked=1),
        row(4, "b", W, agent="hive_q2", txnid=7, blocked=2),  # Hive's later request waits
    ]
    found = wait_graph.victim_cycle(rows, 3)
    assert found is not None and found.victim == "s2 statement s2-wants-a"
    assert "held EXCLUSIVE by hive txn 7" in found.describe()


def test_a_partition_writer_waits_for_a_table_reader_but_not_another_partition():
    rows = [
        row(1, "t", A, kind=R, agent=spark("read-t", "s1", explicit=False)),
        row(2, "t", A, agent=spark("w1", "s2", explicit=False), part="p=1"),
        row(3, "t", W, agent=spark("w2", "s3", explicit=False), part="p=2"),
    ]
    holders = {e.holder for e in wait_graph.edges(rows) if e.is_wait}
    assert holders == {"s1 statement read-t"}
