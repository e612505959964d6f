"""The pure lock model: names, hierarchy, lock sets, grant rule, lock data (no Spark, no server)."""

from __future__ import annotations

import pytest

from sparklock.errors import InvalidObjectError
from sparklock.locks.model import (
    Contender,
    LockData,
    LockMode,
    LockRequest,
    LockType,
    build_lock_set,
    compatible,
    decide,
    exact_lock_set,
)
from sparklock.locks.objects import LockObject, ObjectKind, escape_path_name, unescape_path_name
from sparklock.managers.zookeeper.layout import object_path

S, X = LockMode.SHARED, LockMode.EXCLUSIVE


def test_compatibility_matrix():
    assert compatible(S, S)
    assert not compatible(S, X) and not compatible(X, S) and not compatible(X, X)


@pytest.mark.parametrize(
    "obj,name,path",
    [
        (LockObject("Sales"), "sales", "/ns/sales"),
        (LockObject("db", "Orders"), "db@orders", "/ns/db/orders"),
        (LockObject.of_partition("db", "t", {"P": "a"}), "db@t@p=a", "/ns/db/t/p=a"),
        (
            LockObject.of_partition("db", "t", [("p", "a"), ("q", "b")]),
            "db@t@p=a/q=b",
            "/ns/db/t/p=a/q=b",
        ),
        (
            LockObject.of_partition("db", "t", {"p": "x/y=z"}),
            "db@t@p=x%2Fy%3Dz",
            "/ns/db/t/p=x%2Fy%3Dz",
        ),
        (LockObject.of_partition("db", "t", {"p": "it's"}), "db@t@p=it%27s", "/ns/db/t/p=it%27s"),
        (LockObject.of_partition("db", "t", {"p": "a b ü"}), "db@t@p=a b ü", "/ns/db/t/p=a b ü"),
        (
            LockObject.of_partition("db", "t", {"p": None}),
            "db@t@p=__HIVE_DEFAULT_PARTITION__",
            None,
        ),
        (LockObject(".."), "%2E%2E", "/ns/%2E%2E"),
        (LockObject("db", "a/../b"), "db@a%2F..%2Fb", "/ns/db/a%2F..%2Fb"),
    ],
)
def test_hive_names_and_paths(obj, name, path):
    assert obj.name == name
    if path:
        assert object_path("/ns", obj) == path
    assert LockObject.parse(obj.name) == obj


def test_no_name_leaves_its_node():
    for raw in ["..", ".", "/", "a/b", "a\x00b", "\x7f", "\ud800", "\uffff", "x:y", "*"]:
        obj = LockObject.of_partition(raw if raw not in (".", "..") else "d", raw, {raw: raw})
        for comp in obj.components:
            assert "/" not in comp and comp not in (".", "..") and "\x00" not in comp
        assert LockObject.parse(obj.name) == obj


def test_escape_roundtrip_and_hive_set():
    assert escape_path_name("a\"#%'*/:=?\\{[]^") == "a%22%23%25%27%2A%2F%3A%3D%3F%5C%7B%5B%5D%5E"
    for raw in ["plain", "a%b", "ü/ß", "\x01\x1f"]:
        assert unescape_path_name(escape_path_name(raw)) == raw


def test_invalid_objects():
    with pytest.raises(InvalidObjectError, match="INVALID_LOCK_OBJECT"):
        LockObject("")
    with pytest.raises(InvalidObjectError, match="twice"):
        LockObject.of_partition("d", "t", [("p", "1"), ("P", "2")])
    with pytest.raises(InvalidObjectError, match="at most"):
        LockObject("d", "t" * 2000)


def test_hierarchy():
    p = LockObject.of_partition("d", "t", [("p", "1"), ("q", "2")])
    assert [a.name for a in p.ancestors()] == ["d", "d@t", "d@t@p=1"]
    assert p.kind is ObjectKind.PARTITION and p.parent.kind is ObjectKind.PARTITION
    assert LockObject("d", "t").is_ancestor_of(p) and not p.is_ancestor_of(p)
    w = LockObject.table_writers("d", "t")
    assert w.name == "d@t@_sparklock_writers" and w.kind is ObjectKind.FACET
    assert [a.name for a in w.ancestors()] == ["d", "d@t"]


def test_lock_set_adds_ancestors_dedupes_x_wins_and_sorts():
    t = LockObject("d", "t")
    p1 = LockObject.of_partition("d", "t", {"p": "1"})
    p2 = LockObject.of_partition("d", "t", {"p": "2"})
    other = LockObject("a", "z")
    got = build_lock_set(
        [
            LockRequest(p2, S),
            LockRequest(p1, X),
            LockRequest(t, S),
            LockRequest(p2, X),
            LockRequest(other, S),
            LockRequest(p1, S),
        ]
    )
    assert [(r.name, r.mode) for r in got] == [
        ("a", S),
        ("a@z", S),
        ("d", S),
        ("d@t", S),
        ("d@t@p=1", X),
        ("d@t@p=2", X),
    ]
    exact = exact_lock_set([LockRequest(p1, S), LockRequest(p1, X), LockRequest(p2, S)])
    assert [(r.name, r.mode) for r in exact] == [("d@t@p=1", X), ("d@t@p=2", S)]


def test_grant_rule_is_hives():
    me_x, me_s = Contender(5, X, "me"), Contender(5, S, "me")
    lower_s, lower_x, higher_x = Contender(3, S, "a"), Contender(4, X, "b"), Contender(9, X, "c")
    assert decide(me_s, [lower_s, higher_x, me_s]).granted
    assert not decide(me_x, [lower_s, me_x]).granted
    d = decide(me_s, [lower_s, lower_x, me_s])
    assert not d.granted and d.blockers == [lower_x] and d.nearest_blocker == lower_x
    d = decide(me_x, [lower_s, lower_x])
    assert d.nearest_blocker == lower_x and len(d.blockers) == 2


def test_grant_rule_owner_aware():
    mine_explicit = Contender(1, X, "mine")
    queued_behind_it = Contender(2, S, "other")  # waits for my explicit X
    me = Contender(3, S, "me")
    own = lambda c: c.key == "mine"  # noqa: E731
    assert decide(me, [mine_explicit, queued_behind_it, me], own).granted
    assert not decide(me, [mine_explicit, queued_behind_it, me]).granted
    # a holder that is compatible with my explicit S is a real holder and still blocks my X
    explicit_s, other_s = Contender(1, S, "mine"), Contender(2, S, "o")
    assert not decide(Contender(3, X, "me"), [explicit_s, other_s], own).granted


def test_lock_data_is_hives_format():
    d = LockData.now("q:1", LockType.EXPLICIT, "select  *\n from t where a = ':'", "10.0.0.1")
    raw = d.encode().decode()
    qid, t, kind, query, client = raw.split(":")
    assert (qid, kind, query, client) == (
        "q1",
        "EXPLICIT",
        "select * from t where a = ''",
        "10.0.0.1",
    )
    assert int(t) == d.lock_time_ms
    assert LockData.decode(d.encode()) == d
    hive = LockData.decode(b"hive_2026_abc:1795239324357:IMPLICIT:insert into t:127.0.0.1")
    assert hive.lock_type is LockType.IMPLICIT and hive.lock_time_ms == 1795239324357
    assert LockData.decode(b"garbage").query_id == "garbage"
    assert LockData.decode(None).lock_time_ms == 0


def test_lock_mode_parse():
    assert LockMode.parse(" shared ") is S
    with pytest.raises(ValueError, match="SHARED or EXCLUSIVE"):
        LockMode.parse("READ")


def test_lock_data_user_is_a_sixth_field_hive_ignores():
    data = LockData.now("q1", LockType.IMPLICIT, "SELECT 1", "10.0.0.5", user="alice")
    encoded = data.encode().decode()
    assert encoded.split(":")[4:] == ["10.0.0.5", "u=alice"]  # Hive reads fields 0-4 only
    assert LockData.decode(data.encode()) == data
    without = LockData.now("q1", LockType.IMPLICIT, "SELECT 1", "10.0.0.5")
    assert without.encode().decode().count(":") == 4  # Hive's five fields exactly
    assert LockData.decode(without.encode()).user == ""


def test_a_connector_object_is_a_table_of_its_own_pseudo_database():
    jdbc = LockObject.of_connector("jdbc:derby:memory:db/APP.T")
    assert jdbc.name == "_sparklock-connectors@jdbc%3Aderby%3Amemory%3Adb%2Fapp.t"
    assert jdbc.kind is ObjectKind.TABLE and not jdbc.is_path
    assert LockObject.parse(jdbc.name) == jdbc  # SHOW LOCKS names read back
    assert jdbc != LockObject.of_path("jdbc:derby:memory:db/APP.T")  # never a path's lock
    long = LockObject.of_connector("jdbc:x:" + "a" * 900 + "/t")
    assert long.table.startswith("sha256-") and len(long.name) < 100
    with pytest.raises(InvalidObjectError):
        LockObject.of_connector(" ")


def test_a_granted_lock_info_is_the_one_the_constructor_makes():
    """``LockInfo.granted`` (the ZooKeeper manager's fast path for wide sets) fills every field
    the dataclass has, as the constructor would: a field added later must be added there too."""
    import dataclasses

    from sparklock.locks.model import LockInfo

    obj = LockObject.of_partition("db", "t", {"p": "1"})
    data = LockData.now("q", LockType.IMPLICIT, "select 1")
    fast = LockInfo.granted(obj, S, data, "/ns/db/t/p=1/LOCK-SHARED-0000000001", "owner")
    slow = LockInfo(obj, S, data, "/ns/db/t/p=1/LOCK-SHARED-0000000001", "owner")
    assert fast == slow and hash(fast) == hash(slow)
    assert vars(fast) == vars(slow)
    assert set(vars(fast)) == {f.name for f in dataclasses.fields(LockInfo)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.owner = "other"  # type: ignore[misc]
