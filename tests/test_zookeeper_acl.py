"""Credentials and ACLs against a real ZooKeeper that authenticates (digest and SASL DIGEST-MD5).

One server for the module (SASL users alice and bob in its JAAS file; the ``digest`` scheme needs
no server setup). Managers authenticate as alice; raw kazoo clients play the other identities.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, make_digest_acl

from sparklock.config import SparkLockConfig
from sparklock.errors import LockManagerUnavailableError
from sparklock.locks.model import LockMode, LockRequest, LockType
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.managers.zookeeper.wire.security import ACL_KEY, AUTH, AUTH_PASSWORD
from tests.support.sasl import needs_pure_sasl
from tests.support.zk_managers import closing_managers, manager_conf
from tests.support.zk_security import sasl_server
from tests.support.zk_tree import is_lock

pytestmark = pytest.mark.zookeeper

SASL_USERS = {"alice": "alice-sasl-secret", "bob": "bob-sasl-secret"}
DIGEST_PASSWORD = "alice-digest-secret"
T = LockObject.of_table("default", "t")
P1 = LockObject.of_partition("default", "t", {"p": "1"})


@pytest.fixture(scope="module")
def auth_zk(tmp_path_factory):
    server = sasl_server(tmp_path_factory.mktemp("sasl"), SASL_USERS)
    server.start()
    yield server
    server.cleanup()


def conf(server, namespace: str, **extra: str) -> dict[str, str]:
    return manager_conf(server.address, namespace, **extra)


def alice_digest(server, namespace: str, acl: str = "creator") -> dict[str, str]:
    return conf(
        server, namespace, **{AUTH: "digest:alice", AUTH_PASSWORD: DIGEST_PASSWORD, ACL_KEY: acl}
    )


@pytest.fixture
def managers() -> Iterator:
    with closing_managers() as make:
        yield make


@pytest.fixture
def kazoo_as(auth_zk) -> Iterator:
    """Raw kazoo clients with the given credentials (``auth_data`` / ``sasl_options``)."""
    made: list[KazooClient] = []

    def client(**credentials) -> KazooClient:
        c = KazooClient(hosts=auth_zk.address, **credentials)
        c.start(15)
        made.append(c)
        return c

    yield client
    for c in made:
        c.stop()
        c.close()


def explicit(manager: ZooKeeperLockManager, obj: LockObject, mode=LockMode.EXCLUSIVE):
    return manager.acquire(
        [LockRequest(obj, mode)],
        owner="o",
        query_id="q",
        lock_type=LockType.EXPLICIT,
    )


def lock_path(client: KazooClient, parent: str) -> str:
    return next(f"{parent}/{c}" for c in client.get_children(parent) if is_lock(c))


def acl_of(client: KazooClient, path: str) -> list[tuple[str, str, int]]:
    """``(scheme, user, perms)`` per entry: ZooKeeper 3.9 masks a digest id's hash (``alice:x``)
    for clients without ADMIN on the node."""
    return [(a.id.scheme, a.id.id.split(":")[0], a.perms) for a in client.get_acls(path)[0]]


def test_creator_acl_on_every_node_sparklock_creates(auth_zk, managers, kazoo_as, zk_namespace):
    alice = managers(alice_digest(auth_zk, zk_namespace))
    held = alice.acquire([LockRequest(P1, LockMode.EXCLUSIVE)], owner="o", query_id="q")
    anyone = kazoo_as()
    root = f"/{zk_namespace}"
    expected = [("digest", "alice", 31), ("world", "anyone", 1)]
    parent = f"{root}/default/t/p=1"
    for path in (root, f"{root}/default", f"{root}/default/t", parent, lock_path(anyone, parent)):
        assert acl_of(anyone, path) == expected, path
    alice.release(held)
    assert anyone.get_children(root) == []  # cleaned up as before


def test_other_credentials_cannot_delete_or_overwrite_locks(
    auth_zk, managers, kazoo_as, zk_namespace
):
    alice = managers(alice_digest(auth_zk, zk_namespace))
    held = explicit(alice, T)
    mallory = kazoo_as(auth_data=[("digest", "mallory:guess")])
    parent = f"/{zk_namespace}/default/t"
    node = lock_path(mallory, parent)
    data, _ = mallory.get(node)  # everyone may read: Hive peers must see the locks
    assert data.startswith(b"q:")
    with pytest.raises(NoAuthError):
        mallory.delete(node)
    with pytest.raises(NoAuthError):
        mallory.set(node, b"forged")
    with pytest.raises(NoAuthError):
        mallory.create(f"{parent}/LOCK-SHARED-", b"x", sequence=True)
    with pytest.raises(NoAuthError):
        mallory.delete(f"/{zk_namespace}/default", recursive=True)
    assert [i.name for i in alice.list_locks()] == ["default@t"]
    alice.unlock(T)  # the creator still can
    assert alice.list_locks() == []
    assert held.locks


def test_another_identity_is_refused_with_an_error_naming_the_keys(auth_zk, managers, zk_namespace):
    alice = managers(alice_digest(auth_zk, zk_namespace))
    held = explicit(alice, T, LockMode.SHARED)
    wrong = alice_digest(auth_zk, zk_namespace)
    wrong[AUTH_PASSWORD] = "a-wrong-password"  # digest logins never fail: another identity
    intruder = managers(wrong)
    with pytest.raises(LockManagerUnavailableError) as err:
        explicit(intruder, T, LockMode.SHARED)
    message = str(err.value)
    assert "NoAuth" in message and AUTH in message and ACL_KEY in message
    assert "a-wrong-password" not in message and DIGEST_PASSWORD not in message
    assert [i.name for i in alice.list_locks()] == ["default@t"]  # nothing half-created
    alice.release(held)


def test_open_parent_created_by_someone_else(auth_zk, managers, kazoo_as, zk_namespace):
    """A node Hive (or anyone) created open keeps its ACL: sparklock's locks below it carry the
    creator ACL (no overwrite), but anyone may delete children of an open node."""
    hive = kazoo_as()
    root = f"/{zk_namespace}"
    hive.create(f"{root}/default/t", makepath=True)  # open, as Hive's manager creates them
    alice = managers(alice_digest(auth_zk, zk_namespace))
    held = explicit(alice, P1)
    parent = f"{root}/default/t/p=1"
    assert acl_of(hive, parent) == [("digest", "alice", 31), ("world", "anyone", 1)]  # ours
    assert acl_of(hive, f"{root}/default/t") == [("world", "anyone", 31)]  # Hive's stays open
    with pytest.raises(NoAuthError):
        hive.set(lock_path(hive, parent), b"forged")
    alice.release(held)
    assert hive.get_children(f"{root}/default/t") == []  # its own empty node deleted


def test_cleanup_leaves_a_node_it_may_not_delete_and_still_releases(
    auth_zk, managers, kazoo_as, zk_namespace
):
    """A parent that lets alice create below it but not delete: her release deletes her lock
    node (her own object node allows it) and leaves the empty object node, quietly."""
    admin = kazoo_as(auth_data=[("digest", "admin:admin-secret")])
    root = f"/{zk_namespace}"
    alice_id = make_digest_acl("alice", DIGEST_PASSWORD).id
    admin.create(root, makepath=True)
    admin.create(
        f"{root}/default",
        acl=[
            ACL(31, make_digest_acl("admin", "admin-secret").id),
            ACL(1 | 4, alice_id),  # read + create, no delete
        ],
    )
    alice = managers(alice_digest(auth_zk, zk_namespace))
    held = alice.acquire_set([LockRequest(T, LockMode.EXCLUSIVE)], owner="o", query_id="q")
    alice.release(held)
    assert alice.list_locks() == []
    assert admin.get_children(f"{root}/default/t") == []  # left empty, not an error
    held = alice.acquire_set(
        [LockRequest(T, LockMode.EXCLUSIVE)], owner="o", query_id="q"
    )  # and the next lock set reuses it
    alice.release(held)
    assert alice.list_locks() == []


def test_explicit_acl_list(auth_zk, managers, kazoo_as, zk_namespace):
    bob = make_digest_acl("bob", "bob-digest").id.id
    acl = f"auth::cdrwa,digest:{bob}:cdrwa,world:anyone:r"
    alice = managers(alice_digest(auth_zk, zk_namespace, acl))
    held = explicit(alice, T)
    other = kazoo_as(auth_data=[("digest", "bob:bob-digest")])
    node = lock_path(other, f"/{zk_namespace}/default/t")
    assert set(acl_of(other, node)) == {
        ("digest", "alice", 31),
        ("digest", "bob", 31),
        ("world", "anyone", 1),
    }
    other.delete(node)  # bob is listed: he may
    assert alice.list_locks() == []
    assert held.locks


def test_creator_needs_an_identity():
    with pytest.raises(Exception) as err:
        SparkLockConfig.from_conf({ACL_KEY: "creator"})
    assert ACL_KEY in str(err.value) and AUTH in str(err.value)


@needs_pure_sasl
def test_sasl_digest_md5_creator_acl(auth_zk, managers, kazoo_as, zk_namespace):
    settings = conf(
        auth_zk,
        zk_namespace,
        **{AUTH: "sasl:DIGEST-MD5:alice", AUTH_PASSWORD: SASL_USERS["alice"], ACL_KEY: "creator"},
    )
    alice = managers(settings)
    held = explicit(alice, T)
    bob = kazoo_as(
        sasl_options={"mechanism": "DIGEST-MD5", "username": "bob", "password": SASL_USERS["bob"]}
    )
    node = lock_path(bob, f"/{zk_namespace}/default/t")
    assert bob.get_acls(node)[0] == [ACL(31, Id("sasl", "alice")), ACL(1, Id("world", "anyone"))]
    with pytest.raises(NoAuthError):
        bob.delete(node)
    alice.release(held)
    assert alice.list_locks() == []


@needs_pure_sasl
def test_wrong_sasl_password_fails_at_once_naming_the_key(auth_zk, managers, zk_namespace, caplog):
    secret = "not-alices-password"
    settings = conf(
        auth_zk,
        zk_namespace,
        **{
            AUTH: "sasl:DIGEST-MD5:alice",
            AUTH_PASSWORD: secret,
            "spark.sparklock.zookeeper.connectionTimeout": "60s",
        },
    )
    caplog.set_level(1)
    started = time.monotonic()
    with pytest.raises(LockManagerUnavailableError) as err:
        explicit(managers(settings), T)
    took = time.monotonic() - started
    assert AUTH in str(err.value) and AUTH_PASSWORD in str(err.value) and took < 30
    assert secret not in str(err.value) and secret not in caplog.text


def test_auth_with_open_acl_creates_open_nodes(auth_zk, managers, kazoo_as, zk_namespace):
    alice = managers(alice_digest(auth_zk, zk_namespace, "open"))
    held = explicit(alice, T)
    anyone = kazoo_as()
    node = lock_path(anyone, f"/{zk_namespace}/default/t")
    assert anyone.get_acls(node)[0] == [ACL(31, Id("world", "anyone"))]
    alice.release(held)


def test_no_secret_in_logs_or_lock_listings(auth_zk, managers, zk_namespace, caplog):
    # caplog restores the levels it sets: every logger below kazoo and sparklock at level 1
    for logger in ("", "kazoo", "kazoo.client", "sparklock", "sparklock.zookeeper"):
        caplog.set_level(1, logger=logger)
    alice = managers(alice_digest(auth_zk, zk_namespace))
    held = explicit(alice, T)
    rows = [repr(i) for i in alice.list_locks()]
    alice.release(held)
    text = caplog.text + "".join(rows) + repr(alice.zookeeper)
    assert "Auth(" in caplog.text  # kazoo logged its Auth packet (masked)
    assert DIGEST_PASSWORD not in text
    assert "digest:alice" in caplog.text  # the identity is said, the password is not
