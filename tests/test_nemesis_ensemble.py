"""Nemesis in a ZooKeeper ensemble: the writer's follower cut from the leader.

In an ensemble the *leader* expires sessions, from the touches its followers report; a follower
cut from its leader goes on answering its clients' pings until its own read of the leader times
out (``syncLimit x tickTime``). Writer A is connected only to follower F, whose links to the
other members pass through proxies (``ZooKeeperEnsemble(isolated=3)``); ``syncLimit`` is wide
(20 s against a 4 s session) so that F answers A's pings for seconds after the leader expired
A's session and B, on the other members, was granted A's lock. The data checker of
tests/support/nemesis.py must find B's batch alone and A failed with LOCKS_LOST.

One trial; ``SPARKLOCK_NEMESIS_TRIALS=N`` runs N (each with an ensemble of its own).
"""

from __future__ import annotations

import uuid

import pytest

from tests.support import nemesis
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
    bad = [v for t in results for v in t.violations()]
    leads = [t.lead_ms for t in results]
    print(f"nemesis follower-cut: {len(results)} trial(s), {len(bad)} violation(s), leads {leads}")
    assert not bad
