"""The wait-for graph: cycles among lock owners and the deterministic victim (pure, no Spark)."""

from __future__ import annotations

import itertools

from sparklock.locks.model import LockMode
from sparklock.locks.wait_for import WaitEdge, deadlocks, runs, statement, victim_of

S, X = LockMode.SHARED, LockMode.EXCLUSIVE


def edge(waiter: str, holder: str, obj: str = "db@t", since: int = 0) -> WaitEdge:
    return WaitEdge(waiter, holder, obj, X, X, since)


def test_no_edges_no_deadlock():
    assert deadlocks([]) == []


def test_a_chain_is_not_a_deadlock():
    assert deadlocks([edge("s1", "s2"), edge("s2", "s3"), edge("s4", "s3")]) == []


def test_an_owner_behind_itself_is_not_a_deadlock():
    assert deadlocks([edge("s1", "s1")]) == []


def test_the_two_table_cycle():
    found = deadlocks([edge("s1", "s2", "db@b", since=100), edge("s2", "s1", "db@a", since=200)])
    assert len(found) == 1
    (d,) = found
    assert set(d.owners) == {"s1", "s2"}
    assert d.victim == "s2"  # it started waiting last
    text = d.describe()
    assert "s1 waits for EXCLUSIVE on db@b, held EXCLUSIVE by s2" in text
    assert "s2 waits for EXCLUSIVE on db@a, held EXCLUSIVE by s1" in text
    assert text.startswith("deadlock between 2 waiting statements: ")
    assert text.endswith("victim: s2")


def test_the_cycle_is_a_closed_walk():
    edges = [edge("a", "b"), edge("b", "c"), edge("c", "a"), edge("c", "d"), edge("d", "c")]
    (d,) = deadlocks(edges)  # one cyclic group of four owners
    for here, after in zip(d.cycle, d.cycle[1:] + d.cycle[:1], strict=True):
        assert here.holder == after.waiter


def test_three_sessions_and_a_bystander():
    edges = [
        edge("s1", "s2", since=10),
        edge("s2", "s3", since=30),
        edge("s3", "s1", since=20),
        edge("s4", "s1", since=99),  # waits on the cycle, is not in it
    ]
    (d,) = deadlocks(edges)
    assert set(d.owners) == {"s1", "s2", "s3"}
    assert d.victim == "s2"


def test_two_separate_cycles_each_get_a_victim():
    edges = [edge("a", "b", since=1), edge("b", "a", since=2)]
    edges += [edge("c", "d", since=4), edge("d", "c", since=3)]
    victims = sorted(d.victim for d in deadlocks(edges))
    assert victims == ["b", "c"]


def test_every_reader_picks_the_same_victim_whatever_the_order():
    edges = [edge("s1", "s2", since=5), edge("s2", "s3", since=5), edge("s3", "s1", since=5)]
    seen = {deadlocks(list(p))[0].victim for p in itertools.permutations(edges)}
    assert seen == {"s3"}  # equal waits: the larger owner key
    assert victim_of(edges) == "s3"


def test_a_wide_graph_without_cycles_is_cheap_and_clean():
    edges = [edge(f"w{i}", f"w{i + 1}") for i in range(5000)]
    assert deadlocks(edges) == []
    assert len(deadlocks(edges + [edge("w5000", "w0")])) == 1


def test_two_statements_of_one_session_in_two_threads_are_no_cycle():
    # s1's statement A holds a (implicit) and waits for nothing; s1's B waits for s2's explicit b;
    # s2's statement C waits for a, held by A: A ends by itself, so nothing is stuck.
    a, b, c = statement("s1", "A"), statement("s1", "B"), statement("s2", "C")
    edges = [edge(b, "s2", "db@b"), runs("s1", "B"), edge(c, a, "db@a"), runs("s2", "C")]
    assert deadlocks(edges) == []


def test_sessions_holding_explicit_locks_while_their_statements_wait():
    # s1 holds LOCK TABLE a and its statement q1 waits for b; s2 holds b and its q2 waits for a
    q1, q2 = statement("s1", "q1"), statement("s2", "q2")
    edges = [
        edge(q1, "s2", "db@b", since=100),
        runs("s1", "q1", 100),
        edge(q2, "s1", "db@a", since=200),
        runs("s2", "q2", 200),
    ]
    (d,) = deadlocks(edges)
    assert d.victim == q2  # a statement, never a session
    text = d.describe()
    assert text.startswith("deadlock between 2 waiting statements: ")
    assert "s2 statement q2 waits for EXCLUSIVE on db@a, held EXCLUSIVE by s1" in text
