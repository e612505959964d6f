"""Nemesis: faults against a driver holding ZooKeeper locks while it writes (real processes, a
real ZooKeeper, a checker on the data; see tests/support/nemesis.py and docs/fencing.md).

Each fault must leave the path holding B's complete batch and nothing of A's, and A's statement
failing with LOCKS_LOST. One trial per fault; ``SPARKLOCK_NEMESIS_TRIALS=N`` runs N. The fence
lead time (session expiry minus the JVM's fence) is printed, not asserted.

Every Spark line runs the faults whose handling has code per line (the commit protocol, built per
Scala version; Delta's log store); the faults handled only by line-independent code (the lease's
watchdog, kazoo, ZooKeeper) carry the ``nemesis`` marker alone and run in the whole-suite run.
"""

from __future__ import annotations

import time
import uuid

import pytest

from tests.support import delta, nemesis
from tests.support.tcp_proxy import TcpProxy


def run(fault: str, zk_server, tmp_path, **kwargs) -> None:
    results = []
    for k in range(nemesis.trials()):
        namespace = f"nemesis_{uuid.uuid4().hex[:8]}"
        work = tmp_path / str(k)
        trial = nemesis.pause_trial(fault, zk_server.address, namespace, work, **kwargs)
        print(trial.line())
        results.append(trial)
    assert not nemesis.report(fault, results)


@pytest.mark.spark
@pytest.mark.zookeeper
def test_python_paused_past_the_session_timeout(zk_server, tmp_path):
    """The reproduction: A's Python stopped, its JVM running on; B's overwrite must stand alone."""
    run(
        "python-paused",
        zk_server,
        tmp_path,
        inflict=nemesis.stop_python,
        heal=nemesis.continue_python,
    )


@pytest.mark.nemesis
def test_whole_driver_paused_until_its_job_is_about_to_commit(zk_server, tmp_path):
    """A's whole process group stopped just before its last tasks end, continued after B
    committed: A's job must not commit."""

    def inflict(driver) -> None:
        time.sleep(2 * 2 * nemesis.A_SECONDS - 1.0)  # the second wave's last second
        nemesis.stop_group(driver)

    run(
        "driver-paused",
        zk_server,
        tmp_path,
        inflict=inflict,
        heal=nemesis.continue_group,
    )


@pytest.mark.nemesis
def test_partition_between_driver_and_zookeeper(zk_server, tmp_path):
    """A reaches ZooKeeper only through a proxy that is cut (storage stays reachable); the link
    is restored once B has committed."""
    host, port = zk_server.address.rsplit(":", 1)
    with TcpProxy(host, int(port)) as proxy:
        run(
            "partition",
            zk_server,
            tmp_path,
            a_quorum=f"127.0.0.1:{proxy.port}",
            inflict=lambda driver: proxy.cut(),
            heal=lambda driver: proxy.reopen(),
        )


@pytest.mark.nemesis
def test_silent_partition_between_driver_and_zookeeper(zk_server, tmp_path):
    """A's link to ZooKeeper stays open but drops every byte both ways (a lost route, a
    firewall dropping packets): nothing tells kazoo, which learns only from its read timeout;
    the link is healed once B has committed."""
    host, port = zk_server.address.rsplit(":", 1)
    with TcpProxy(host, int(port)) as proxy:
        run(
            "silent-partition",
            zk_server,
            tmp_path,
            a_quorum=f"127.0.0.1:{proxy.port}",
            inflict=lambda driver: proxy.silence(),
            heal=lambda driver: proxy.heal(),
        )


@pytest.mark.nemesis
def test_leader_killed_during_grants_and_releases(tmp_path):
    """A 3-server ensemble loses its leader while two writers take turns on one path."""
    from tests.support.zookeeper import ZooKeeperEnsemble

    bad = []
    for k in range(nemesis.trials()):
        with ZooKeeperEnsemble(3) as ensemble:
            namespace = f"nemesis_{uuid.uuid4().hex[:8]}"
            churn = nemesis.churn_trial(ensemble, namespace, tmp_path / str(k))
        print(churn.line())
        bad += churn.violations()
    print(f"nemesis leader-killed: {nemesis.trials()} trial(s), {len(bad)} violation(s)")
    assert not bad


@pytest.mark.nemesis
def test_python_paused_with_separate_executor_jvms(zk_server, tmp_path):
    """The pause case in ``local-cluster`` mode: A's tasks run in an executor JVM of their own,
    which the driver JVM's fence must reach (job cancellation) and whose task commits must stay
    in A's own staging area."""
    run(
        "python-paused-local-cluster",
        zk_server,
        tmp_path,
        a_conf={"spark.master": "local-cluster[1,2,1024]"},
        inflict=nemesis.stop_python,
        heal=nemesis.continue_python,
    )


@pytest.mark.delta
@delta.needs_delta
@pytest.mark.nemesis
@pytest.mark.spark
@pytest.mark.zookeeper
def test_python_paused_while_overwriting_a_delta_table(zk_server, tmp_path):
    """The reproduction on a Delta table: A's tasks write their files where no reader looks, so
    what counts is the log: its newest version must be B's batch alone. A fault like the others
    (the Delta line's run, ``-m delta``, takes it): the log store's check is one jar for every
    Spark line, and tests/test_delta_lease.py proves it on each Delta release."""
    run(
        "python-paused-delta",
        zk_server,
        tmp_path,
        inflict=nemesis.stop_python,
        heal=nemesis.continue_python,
        fmt="delta",
    )
