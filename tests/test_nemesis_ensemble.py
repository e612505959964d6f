"""Nemesis in a ZooKeeper ensemble: the writer's follower cut from the leader.

In an ensemble the *leader* expires sessions, from the touches its followers report; a follower
cut from its leader goes on answering its clients' pings until its own read of the leader times
out (``syncLimit x tickTime``). Writer A is connected only to follower F, whose links to the
other members pass through proxies (``ZooKeeperEnsemble(isolated=3)``); ``syncLimit`` is wide
(20 s against a 4 s session) so that F answers A's pings for seconds after the leader expired
A's session and B, on the other members, was granted A's lock. The data checker of
tests/support/nemesis.py must find B's batch alone and A failed with LOCKS_LOST.

One trial; ``SPARKLOCK_NEMESIS_TRIALS=N`` runs N (each with an ensemble of its own). The rule
that renews the lease from the leader's confirmations (sparklock/managers/zookeeper/wire/
confirm.py) and the standalone case it leaves as it was are checked here too, quickly.
"""

from __future__ import annotations

import time
import uuid

import pytest

from sparklock.managers.zookeeper.wire.confirm import SyncChain
from sparklock.managers.zookeeper.wire.session import SharedZooKeeperClient
from tests.support import nemesis
from tests.support.lease_faults import wait_until
from tests.support.zookeeper import ZooKeeperEnsemble

#: ``tickTime`` 200 ms (the servers' default here) times 100: F serves 20 s after the cut.
WIDE_SYNC_LIMIT = ["syncLimit=100"]
#: A's tasks per row: its job runs 12 s, so that unfenced it commits after B (granted once the
#: leader expired A's session, ~4 s after the cut) and before F drops its clients.
A_SECONDS = 3.0
F = 3


@pytest.mark.nemesis
def test_follower_cut_from_its_leader(tmp_path):
    """A holds EXCLUSIVE through follower F and writes slowly; F is silenced from the leader;
    the leader expires A's session; B overwrites through the other members."""
    results = []
    for k in range(nemesis.trials()):
        with ZooKeeperEnsemble(3, isolated=F, extra_config=WIDE_SYNC_LIMIT) as ensemble:
            trial = nemesis.pause_trial(
                "follower-cut",
                ensemble.others_address(F),
                f"nemesis_{uuid.uuid4().hex[:8]}",
                tmp_path / str(k),
                a_quorum=ensemble.member(F).address,
                inflict=lambda driver, e=ensemble: e.cut_isolated(),
                heal=lambda driver, e=ensemble: e.heal_isolated(),
                a_seconds=A_SECONDS,
                warm=True,
            )
        print(trial.line())
        print(f"  A: {str(trial.a)[:300]}\n  B: {str(trial.b)[:300]}")
        results.append(trial)
    assert not nemesis.report("follower-cut", results)


def test_a_sync_renews_only_once_a_ping_round_lies_between_two_answers():
    """S_j, then S_m sent at least ``gap`` after S_j's answer, then S_k sent after S_m's
    answer: S_k's answer confirms t_j, and nothing earlier in the chain confirms anything."""
    gap = 100
    chain = SyncChain()
    assert chain.answered(0, 10, gap) is None  # S_j alone
    assert chain.answered(50, 60, gap) is None  # too soon after S_j's answer to be S_m
    assert chain.answered(120, 130, gap) is None  # S_m (110 after S_j's answer): no S_k yet
    assert chain.answered(140, 150, gap) == 0  # S_k: the leader heard the session after t_j
    assert chain.answered(160, 170, gap) == 0  # S_j=50 would need an S_m sent from 160 on
    assert chain.answered(270, 280, gap) == 50  # S_m=160 was sent 100 after 50's answer
    chain.reset()
    assert chain.answered(1000, 1010, gap) is None  # a new connection proves nothing yet
    assert chain.answered(1120, 1300, gap) is None  # S_m, answered late
    assert chain.answered(1150, 1310, gap) is None  # sent before S_m's answer: no S_k


@pytest.mark.zookeeper
def test_a_standalone_server_is_known_and_sent_no_syncs(zk_server):
    """On a standalone server the answers renew the lease as before, and no sync is sent."""
    shared = SharedZooKeeperClient(zk_server.address, 4.0, 10.0)
    shared._retain()
    try:
        shared.ensure_started()
        wait_until(lambda: shared.lease.standalone is not None, 5, "the server's mode")
        assert shared.lease.standalone is True
        first = shared.lease.term[1]
        time.sleep(2.0)  # idle: kazoo's pings alone (every 1.33 s) renew it
        assert shared.lease.term[1] > first
        assert not shared.lease._syncs
    finally:
        shared._release()
