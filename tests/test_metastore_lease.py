"""The metastore manager's lease, enforced by the driver's JVM (docs/fencing.md), on a real Hive
4.0.1 metastore: a statement's term (its own request, and its owner's LOCK TABLE requests that
cover what it did not send), and the nemesis: a writer whose Python stalls past
``metastore.txn.timeout``, or whose link to the metastore goes silent, is fenced by its own JVM
(real driver processes, a checker on the data; ``tests/support/metastore_nemesis.py``).

Each nemesis trial must leave the data holding B's complete batch and nothing of A's, and A's
statement failing with ``LOCKS_LOST``. One trial per fault; ``SPARKLOCK_NEMESIS_TRIALS=N`` runs
N. The fence lead (the metastore's expiry of A's request minus A's JVM fence) is printed, and
must be positive: the JVM stopped before anyone else could be granted the lock.
"""

from __future__ import annotations

import time

import pytest

from sparklock.locks.model import LockMode, LockType
from sparklock.locks.objects import LockObject
from tests.support import metastore_nemesis as mn
from tests.support import nemesis
from tests.support.locks import take, wait_for
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.metastore

X = LockMode.EXCLUSIVE


def test_a_statement_under_lock_database_lives_under_that_lock_s_lease(hive_metastore):
    """Covered by its owner's LOCK DATABASE, a statement sends no request: its term is that
    request's, renewed (to the listeners: the JVM) by that request's answered heartbeats, and
    lost with it when they stop being answered."""
    from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings

    host, port = hive_metastore.uri.removeprefix("thrift://").split(":")
    with TcpProxy(host, int(port)) as proxy:
        m = MetastoreLockManager(MetastoreSettings(uris=proxy.uri, socket_timeout=1.0))
        renewals: list[tuple[int, int]] = []
        m.watch_lease(lambda epoch, deadline: renewals.append((epoch, deadline)))
        db = LockObject.of_database("mslease_covered")
        try:
            explicit = take(m, db, X, "s", "lock-db", lock_type=LockType.EXPLICIT)
            stmt = take(m, LockObject.of_table(db.database, "t"), X, "s", "covered")
            assert stmt.handles == [] and stmt.lease_epoch is not None and stmt.lease_epoch < 0
            assert explicit.lease_epoch is None  # LOCK statements are not bound in the JVM
            epoch, deadline = m.held_lease(stmt)
            assert epoch == stmt.lease_epoch and deadline > time.monotonic_ns()
            # 10 s timeout: heartbeats every 3.3 s, the term 9 s past the last one's send
            assert deadline - time.monotonic_ns() > 8e9
            assert wait_for(lambda: any(e == epoch and d > deadline for e, d in renewals), 10)
            proxy.cut()
            assert wait_for(lambda: stmt.lost, 15)
            assert "fenced" in (stmt.lost_reason or ""), stmt.lost_reason
            assert m.held_lease(stmt)[1] == 0
        finally:
            m.close()


@pytest.fixture(scope="module")
def a_link(hive_metastore):
    """Writer A's way to the metastore: a proxy a fault can silence."""
    host, port = hive_metastore.uri.removeprefix("thrift://").split(":")
    with TcpProxy(host, int(port)) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def writers(hive_metastore, a_link, tmp_path_factory):
    work = tmp_path_factory.mktemp("metastore-lease")
    a, b = mn.start(hive_metastore.uri, work, a_uri=a_link.uri)
    try:
        yield a, b
    finally:
        a_link.heal()
        for d in (a, b):
            nemesis.continue_python(d)
            d.close()


def check(trials: list[nemesis.Trial]) -> None:
    for t in trials:
        print(t.line())
    assert not nemesis.report(trials[0].fault, trials)
    leads = [t.lead_ms for t in trials]
    assert all(lead is not None and lead > 0 for lead in leads), leads


def overwrites(fault: str, hive_metastore, writers, tmp_path, link=None) -> None:
    """The trials of a fault hitting A while it overwrites a path (``mn.fault_trial``)."""
    a, b = writers
    trials = []
    for k in range(nemesis.trials()):
        path = tmp_path / str(k) / "target"
        a_cmd = mn.overwrite(path, "A", mn.A_ROWS, mn.A_SECONDS)
        b_cmd = mn.overwrite(path, "B", nemesis.B_ROWS)
        watch = mn.RequestWatch(hive_metastore.uri)
        trials.append(mn.fault_trial(fault, a, b, path, a_cmd, b_cmd, watch, link=link))
    check(trials)


@pytest.mark.nemesis
def test_python_paused_past_the_txn_timeout(hive_metastore, writers, tmp_path):
    """The reproduction: A overwrites a path, its Python stopped until the metastore expired its
    request, B overwrites the path; A's JVM must have fenced (its job cancelled, its commit
    refused) before the expiry."""
    overwrites("metastore-python-paused", hive_metastore, writers, tmp_path)


@pytest.mark.nemesis
def test_link_silenced_past_the_txn_timeout(hive_metastore, writers, a_link, tmp_path):
    """A's link to the metastore goes silent while it overwrites a path (its Python runs on: its
    heartbeats hang until the client's read timeout, none is answered); the metastore expires
    A's request, B overwrites: A's JVM must have fenced before the expiry."""
    overwrites("metastore-link-silenced", hive_metastore, writers, tmp_path, link=a_link)


@pytest.mark.nemesis
def test_statement_under_lock_database_is_fenced(hive_metastore, writers, tmp_path):
    """A's INSERT OVERWRITE runs under its session's LOCK DATABASE (EXCLUSIVE): covered, it
    sends no lock request of its own, and lives under that lock's lease. A's Python stopped,
    the metastore expires the LOCK DATABASE request, B overwrites: A must have been fenced."""
    a, b = writers
    trials = []
    for k in range(nemesis.trials()):
        db, path = f"mslease{k}", tmp_path / str(k) / "target"
        for d in (a, b):  # local catalogs, the same names: the same metastore objects
            for sql in (
                f"CREATE DATABASE IF NOT EXISTS {db}",
                f"CREATE TABLE {db}.t (batch STRING, id INT) USING parquet LOCATION '{path}'",
            ):
                answer = d.sql(sql)
                assert answer["ok"], (sql, answer)
        watch = mn.RequestWatch(hive_metastore.uri)  # A's requests: its LOCK DATABASE's too
        answer = a.sql(f"LOCK DATABASE {db} EXCLUSIVE")
        assert answer["ok"], answer
        a_cmd = mn.insert_overwrite(f"{db}.t", "A", mn.A_ROWS, mn.A_SECONDS)
        b_cmd = mn.insert_overwrite(f"{db}.t", "B", nemesis.B_ROWS)
        fault = "metastore-lock-database"
        trials.append(mn.fault_trial(fault, a, b, path, a_cmd, b_cmd, watch))
    check(trials)
