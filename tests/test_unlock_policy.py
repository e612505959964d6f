"""``spark.sparklock.unlock.policy`` / ``spark.sparklock.admins`` (issue 17 item 4) through the
service the JVM calls, on the embedded manager and on a real ZooKeeper; the CLI's ``release`` as
the operator's override. The same through real beeline users: ``test_thriftserver_unlock.py``."""

from __future__ import annotations

import contextlib
import io
import time

import pytest

from sparklock import managers
from sparklock.cli import RELEASE_OVERRIDE, main
from sparklock.config import SparkLockConfig
from sparklock.errors import ConfigError, NotLockedError, UnlockNotOwnerError
from sparklock.locks.model import LockMode, LockRequest, LockType
from sparklock.locks.objects import LockObject
from sparklock.protocol.messages import (
    ExplicitLockRequest,
    ShowLocksRequest,
    UnlockRequest,
    read_request,
)
from sparklock.service import LockService, config_of

T = {"database": "default", "table": "unlock_policy_t", "partition": []}
FAST = {"spark.sparklock.lock.numRetries": "1", "spark.sparklock.lock.retryInterval": "10ms"}
OWNER = {**FAST, "spark.sparklock.unlock.policy": "owner", "spark.sparklock.admins": "root, ops"}


@pytest.fixture(params=["embedded", pytest.param("zookeeper", marks=pytest.mark.zookeeper)])
def conf(request):
    """The manager's keys (a ZooKeeper one on the session's real server, own namespace)."""
    if request.param == "embedded":
        yield {"spark.sparklock.manager": "embedded"}
        return
    zk_server = request.getfixturevalue("zk_server")
    namespace = request.getfixturevalue("zk_namespace")
    keys = {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": zk_server.address,
        "spark.sparklock.zookeeper.namespace": namespace,
    }
    yield keys
    managers.get_manager(config_of(keys)).close()


def lock(svc, conf, user, session="s-lock", obj=T):
    svc.lock(
        read_request(
            ExplicitLockRequest,
            {
                "session": session,
                "conf": conf,
                "object": obj,
                "mode": "EXCLUSIVE",
                "sql": "LOCK TABLE unlock_policy_t EXCLUSIVE",
                "user": user,
            },
        )
    )


def unlock(svc, conf, user, session="s-unlock", obj=T):
    svc.unlock(
        read_request(UnlockRequest, {"session": session, "conf": conf, "object": obj, "user": user})
    )


def locks(svc, conf):
    shown = svc.show_locks(read_request(ShowLocksRequest, {"conf": conf}))
    return [[r.name, r.lock_type, r.user] for r in shown]


def test_owner_policy_refuses_another_users_unlock_naming_the_owner(conf):
    svc, c = LockService(), {**OWNER, **conf}
    lock(svc, c, "alice")
    with pytest.raises(UnlockNotOwnerError) as refused:
        unlock(svc, c, "bob")
    text = str(refused.value)
    assert text.startswith(
        "UNLOCK_NOT_OWNER: UNLOCK of default@unlock_policy_t refused for user bob"
    )
    assert "held by user alice" in text and "spark.sparklock.admins" in text
    assert locks(svc, c) == [["default@unlock_policy_t", "EXPLICIT", "alice"]]  # nothing removed
    unlock(svc, c, "alice")  # the owner may
    assert locks(svc, c) == []


@pytest.mark.parametrize("admin", ["root", "ops"])
def test_an_admin_may_unlock_anyones_lock(conf, admin):
    svc, c = LockService(), {**OWNER, **conf}
    lock(svc, c, "alice")
    unlock(svc, c, admin)
    assert locks(svc, c) == []
    with pytest.raises(NotLockedError):
        unlock(svc, c, admin)


def test_owner_policy_counts_every_lock_on_the_object(conf):
    """Two users' SHARED locks on one table: neither may remove both; an admin may."""
    svc, c = LockService(), {**OWNER, **conf}
    for user in ("alice", "bob"):
        svc.lock(
            read_request(
                ExplicitLockRequest,
                {"session": f"s-{user}", "conf": c, "object": T, "mode": "SHARED", "user": user},
            )
        )
    with pytest.raises(UnlockNotOwnerError, match="held by user bob"):
        unlock(svc, c, "alice")
    assert len(locks(svc, c)) == 2
    unlock(svc, c, "root")
    assert locks(svc, c) == []


def test_a_lock_without_user_is_only_an_admins(conf):
    """A Hive client's lock carries no ``u=`` field: nobody but an admin owns it."""
    c = {**OWNER, **conf}
    manager = managers.get_manager(config_of(c))
    obj = LockObject.of_table("default", "unlock_policy_t")
    manager.acquire(
        [LockRequest(obj, LockMode.EXCLUSIVE)],
        owner="hive-session",
        query_id="hive_q",
        lock_type=LockType.EXPLICIT,
    )
    svc = LockService()
    with pytest.raises(UnlockNotOwnerError, match=r"an unknown user \(no u= field\)"):
        unlock(svc, c, "alice")
    with pytest.raises(UnlockNotOwnerError, match="a user sparklock cannot name"):
        unlock(svc, c, None)
    unlock(svc, c, "ops")
    assert locks(svc, c) == []


def test_any_policy_is_hives_behaviour(conf):
    svc, c = LockService(), {**FAST, **conf}  # the default
    assert config_of(c).unlock.policy == "any"
    lock(svc, c, "alice")
    unlock(svc, c, "bob")
    assert locks(svc, c) == []


def test_config_values():
    cfg = SparkLockConfig.from_conf(OWNER)
    assert cfg.unlock.owner_only and cfg.unlock.admins == {"root", "ops"}
    assert not SparkLockConfig.from_conf({}).unlock.owner_only
    with pytest.raises(ConfigError, match="spark.sparklock.unlock.policy.*any or owner"):
        SparkLockConfig.from_conf({"spark.sparklock.unlock.policy": "nobody"})
    with pytest.raises(ConfigError, match="spark.sparklock.admins"):
        SparkLockConfig.from_conf({"spark.sparklock.admins": "a:b"})


@pytest.mark.zookeeper
def test_cli_release_is_the_operators_override(zk_server, zk_namespace):
    c = {
        **OWNER,
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": zk_server.address,
        "spark.sparklock.zookeeper.namespace": zk_namespace,
    }
    svc = LockService()
    try:
        lock(svc, c, "alice")
        out = io.StringIO()
        args = [
            "release",
            "default@unlock_policy_t",
            "--conf",
            "spark.sparklock.unlock.policy=owner",
        ]
        code = main([*args, "--quorum", zk_server.address, "--namespace", zk_namespace], out=out)
        assert code == 0
        text = out.getvalue()
        assert RELEASE_OVERRIDE in text and "operator override" in text
        assert "released EXCLUSIVE EXPLICIT lock" in text and "user=alice" in text
        assert locks(svc, c) == []
    finally:
        managers.get_manager(config_of(c)).close()
    help_text = io.StringIO()
    with pytest.raises(SystemExit):
        with contextlib.redirect_stdout(help_text):
            main(["release", "--help"])
    assert "operator's override" in " ".join(help_text.getvalue().split())


def writer(conf, execution: str, session: str = "s-writer"):
    """A running INSERT's facts on T (its implicit lock)."""
    from sparklock.rules.facts import parse_facts

    return parse_facts(
        {
            "session": session,
            "executionId": execution,
            "sql": "INSERT INTO unlock_policy_t",
            "conf": {**conf, **FAST},
            "writes": [{"kind": "table", "catalog": "spark_catalog", **T}],
        }
    )


def test_unlock_fences_the_running_statement_it_took_the_lock_from(conf):
    """Hive's rule frees the object; the statement whose lock it removed is fenced (its fencers
    run and its release fails with LOCKS_LOST naming the UNLOCK), unless a revoker answers that
    its commit is already out: that one is left to finish."""
    from sparklock.errors import LocksLostError

    svc = LockService()
    fenced: list[tuple[str, str]] = []
    svc.add_fencer(lambda handle, reason: fenced.append((handle, reason)))
    answers = {"": "fenced"}
    svc.add_revoker(lambda handle, reason: answers.get(handle, answers[""]))

    running = svc.acquire(writer(conf, "1"))
    unlock(svc, {**conf, **FAST}, "bob", session="s-bob")
    assert [h for h, _ in fenced] == [running]
    with pytest.raises(LocksLostError) as lost:
        svc.release(running)
    text = str(lost.value)
    assert "UNLOCK TABLE" in text and "unlock_policy_t" in text and "bob" in text, text
    assert "s-bob" in text, text
    assert not lost.value.committed

    committed = svc.acquire(writer(conf, "2"))
    answers[committed] = "committed"
    unlock(svc, {**conf, **FAST}, "bob", session="s-bob")
    assert [h for h, _ in fenced] == [running]  # not fenced: its write is out
    svc.release(committed)  # Hive's rule: it finishes (a WARNING says it ran unprotected)


def test_unlock_of_what_a_writer_only_reads_leaves_it_running(conf):
    """A statement that reads T and writes another table keeps its write protected when an UNLOCK
    takes its SHARED lock on T: it is not fenced (a reader goes on, as under Hive's rule)."""
    from sparklock.rules.facts import parse_facts

    svc = LockService()
    fenced: list[str] = []
    svc.add_fencer(lambda handle, reason: fenced.append(handle))
    svc.add_revoker(lambda handle, reason: "fenced")
    other = {"database": "default", "table": "unlock_policy_out", "partition": []}
    facts = {
        "session": "s-copy",
        "executionId": "3",
        "sql": "INSERT INTO unlock_policy_out SELECT * FROM unlock_policy_t",
        "conf": {**conf, **FAST},
        "reads": [{"kind": "table", "catalog": "spark_catalog", **T}],
        "writes": [{"kind": "table", "catalog": "spark_catalog", **other}],
    }
    copying = svc.acquire(parse_facts(facts))
    unlock(svc, {**conf, **FAST}, "bob", session="s-bob")
    assert fenced == []
    svc.release(copying)  # no LOCKS_LOST: its write was never open to another writer


def test_explicit_scope_removes_only_lock_table_locks(conf):
    """``unlock.scope=explicit``: a running statement's lock stays (nothing fenced; an object
    held only by statements is NOT_LOCKED), a LOCK TABLE lock goes."""
    c = {**FAST, **conf, "spark.sparklock.unlock.scope": "explicit"}
    assert config_of(c).unlock.scope == "explicit"
    svc = LockService()
    fenced: list[str] = []
    svc.add_fencer(lambda handle, reason: fenced.append(handle))
    svc.add_revoker(lambda handle, reason: "fenced")
    running = svc.acquire(writer(c, "1"))
    with pytest.raises(NotLockedError):
        unlock(svc, c, "bob")
    kinds = {row[1] for row in locks(svc, c)}
    assert fenced == [] and kinds == {"IMPLICIT"}, kinds
    svc.release(running)  # no LOCKS_LOST: nothing took its lock
    lock(svc, c, "alice")
    unlock(svc, c, "bob")
    assert locks(svc, c) == []
    with pytest.raises(ConfigError, match="spark.sparklock.unlock.scope.*all or explicit"):
        SparkLockConfig.from_conf({"spark.sparklock.unlock.scope": "mine"})


@pytest.mark.zookeeper
def test_a_lock_removed_by_another_client_fences_the_writer(zk_server, zk_namespace):
    """An UNLOCK of another driver (here: a plain ZooKeeper client deleting the node, as
    ``python -m sparklock release`` or Hive's UNLOCK would) reaches the writer through its watch:
    fenced, and its release fails with LOCKS_LOST. A reader's removed lock and the writer's own
    release fence nothing."""
    from sparklock.errors import LocksLostError
    from sparklock.rules.facts import parse_facts
    from tests.support.lease_faults import wait_until
    from tests.support.zk_tree import inspecting

    def table_lock(handle: str) -> str:
        (lock_id,) = [i.lock_id for i in svc.held(handle).locks if i.name.endswith(T["table"])]
        return lock_id

    conf = {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": zk_server.address,
        "spark.sparklock.zookeeper.namespace": zk_namespace,
    }
    svc = LockService()
    fenced: list[tuple[str, str]] = []
    svc.add_fencer(lambda handle, reason: fenced.append((handle, reason)))
    try:
        with inspecting(zk_server.address) as other:
            running = svc.acquire(writer(conf, "1"))
            other.delete(table_lock(running))
            wait_until(lambda: fenced, 10, "the writer fenced")
            assert [h for h, _ in fenced] == [running]
            with pytest.raises(LocksLostError) as lost:
                svc.release(running)
            assert "removed by another client" in str(lost.value), str(lost.value)

            done = svc.acquire(writer(conf, "2"))
            svc.release(done)  # its own release: no fence
            reader = svc.acquire(
                parse_facts(
                    {
                        "session": "s-read",
                        "executionId": "3",
                        "sql": "SELECT * FROM unlock_policy_t",
                        "conf": {**conf, **FAST},
                        "reads": [{"kind": "table", "catalog": "spark_catalog", **T}],
                    }
                )
            )
            other.delete(table_lock(reader))
            time.sleep(1.0)  # a watch would have fired by now (local server)
            assert [h for h, _ in fenced] == [running]
            svc.release(reader)
    finally:
        managers.get_manager(config_of(conf)).close()
