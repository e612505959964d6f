"""``spark.sparklock.unlock.policy=owner`` with real beeline users of one Thrift server, on a real
ZooKeeper and on the embedded manager (issue 17 item 4): another user's UNLOCK is refused naming
the owner, the owner's and an admin's succeed, and no session can switch the policy off for
itself (the keys are static SQL confs: Spark itself refuses ``SET``). Also: the query-text keys
(item 5) are a session's own, set with ``SET``."""

from __future__ import annotations

import pytest

from tests.support.servers import ServerProcess, beeline, rows
from tests.support.show_locks_columns import EXTENDED
from tests.support.spark_versions import newest_line
from tests.test_thriftserver import server_conf

pytestmark = pytest.mark.spark

NAMESPACE = "sparklock_thrift_unlock"
#: The policy is the manager's, the users are the Thrift server's: an older Spark line's run
#: checks its server's users on the default manager; the newest line's, on each manager.
BACKENDS = ["zookeeper", "embedded"] if newest_line() else ["embedded"]


@pytest.fixture(scope="module", params=BACKENDS)
def server(request, zk_server, tmp_path_factory):
    conf = {
        **server_conf(zk_server, NAMESPACE),
        "spark.sparklock.manager": request.param,
        "spark.sparklock.unlock.policy": "owner",
        "spark.sparklock.admins": "root",
    }
    srv = ServerProcess("thriftserver", conf, tmp_path_factory.mktemp("thrift_unlock"))
    srv.wait_ready()
    created = beeline(srv.port, "root", "CREATE TABLE t (a INT) USING parquet")
    assert created.returncode == 0, created.stdout + created.stderr
    yield srv
    assert srv.terminate() == 0, srv.log_tail()


def ok(r) -> None:
    assert r.returncode == 0, r.stdout + r.stderr


def held(server) -> list[tuple[str, str, str]]:
    """(mode, lock_type, user) of every lock on t, as SHOW LOCKS EXTENDED lists them."""
    shown = rows(beeline(server.port, "root", "SHOW LOCKS t EXTENDED"))
    return [(x[1], x[4], x[7]) for x in shown if len(x) == len(EXTENDED)]


def test_another_users_unlock_is_refused_naming_the_owner(server):
    ok(beeline(server.port, "alice", "LOCK TABLE t EXCLUSIVE"))
    r = beeline(server.port, "bob", "UNLOCK TABLE t")
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "UNLOCK_NOT_OWNER" in out and "refused for user bob" in out, out
    assert "held by user alice" in out, out
    assert held(server) == [("EXCLUSIVE", "EXPLICIT", "alice")]  # still there
    ok(beeline(server.port, "alice", "UNLOCK TABLE t"))  # the owner, from a later session
    assert held(server) == []


def test_an_admin_may_unlock(server):
    ok(beeline(server.port, "alice", "LOCK TABLE t SHARED"))
    ok(beeline(server.port, "root", "UNLOCK TABLE t"))
    assert held(server) == []


def test_a_session_cannot_change_the_policy_for_itself(server):
    ok(beeline(server.port, "alice", "LOCK TABLE t EXCLUSIVE"))
    try:
        for key, value in (("unlock.policy", "any"), ("admins", "bob")):
            r = beeline(server.port, "bob", f"SET spark.sparklock.{key}={value}; UNLOCK TABLE t")
            assert r.returncode != 0
            out = r.stdout + r.stderr
            # Spark's own refusal (3.5: "... of a static config", 4.x: "... of the static Spark
            # config", CANNOT_MODIFY_STATIC_CONFIG)
            assert "cannot modify the value of" in out.lower() and "static" in out.lower(), out
            assert f"spark.sparklock.{key}" in out, out
            assert held(server) == [("EXCLUSIVE", "EXPLICIT", "alice")]
    finally:
        ok(beeline(server.port, "alice", "UNLOCK TABLE t"))


@pytest.mark.parametrize(
    "settings,expected",
    [
        ("SET spark.sparklock.lock.queryString.mode=summary", "LOCK TABLE default@t SHARED"),
        ("SET spark.sparklock.lock.queryString.maxLength=4", "LOCK"),
    ],
)
def test_query_text_settings_are_per_session(server, settings, expected):
    """The query-text keys travel with the session's conf (issue 17 item 5)."""
    ok(beeline(server.port, "erin", f"{settings}; LOCK TABLE t SHARED /* 'literal' */"))
    try:
        shown = rows(beeline(server.port, "root", "SHOW LOCKS t EXTENDED"))
        assert [x[5] for x in shown if len(x) == len(EXTENDED)] == [expected]
    finally:
        ok(beeline(server.port, "erin", "UNLOCK TABLE t"))
