"""Lock objects of catalogs other than the session catalog: names, hierarchy, round trips.

Pure Python (no Spark): a table of any catalog must be named so that it never collides with a
Hive name, displays as written (``ice.db.t``), and parses back from its display name, its znode
components and its metastore components alike.
"""

from __future__ import annotations

import pytest

from sparklock.errors import InvalidObjectError
from sparklock.locks.model import LockMode, LockRequest, build_lock_set
from sparklock.locks.objects import LockObject, ObjectKind
from sparklock.managers.metastore import mapping
from sparklock.managers.zookeeper.layout import object_from_components, object_path

S, X = LockMode.SHARED, LockMode.EXCLUSIVE


@pytest.mark.parametrize(
    ("obj", "name", "path"),
    [
        (LockObject.of_catalog("ice"), "ice.", "/ns/ice."),
        (LockObject.of_namespace("ice", ["db"]), "ice.db.", "/ns/ice./db."),
        (LockObject.of_catalog_table("ice", ["db"], "t"), "ice.db.t", "/ns/ice./db./t"),
        (LockObject.of_catalog_table("Ice", ["A", "B"], "T"), "ice.a.b.t", "/ns/ice./a./b./t"),
        (LockObject.of_catalog_table("jdb", [], "t"), "jdb.t", "/ns/jdb./t"),
        (
            LockObject.of_partition(LockObject.of_namespace("ice", ["db"]).database, "t", {"p": 1}),
            "ice.db.t@p=1",
            "/ns/ice./db./t/p=1",
        ),
        (
            LockObject.table_writers(LockObject.of_namespace("ice", ["db"]).database, "t"),
            "ice.db.t@_sparklock_writers",
            "/ns/ice./db./t/_sparklock_writers",
        ),
        # dots, "@" and slashes inside a part are escaped: every part splits back exactly
        (
            LockObject.of_catalog_table("c", ["a.b", "x@y"], "t.1/2"),
            "c.a%2Eb.x%40y.t%2E1%2F2",
            "/ns/c./a%2Eb./x%40y./t%2E1%2F2",
        ),
    ],
)
def test_catalog_names_paths_and_round_trips(obj: LockObject, name: str, path: str) -> None:
    assert obj.name == name
    assert str(obj) == name
    assert object_path("/ns", obj) == path
    assert LockObject.parse(name) == obj
    head, at, rest = name.partition("@")
    assert LockObject.parse(head.upper() + at + rest) == obj  # names case-insensitive, as Hive's
    assert object_from_components(obj.components) == obj


def test_catalog_and_namespace_read_back() -> None:
    obj = LockObject.of_catalog_table("ice", ["a.b", "c"], "t")
    assert (obj.catalog, obj.namespace, obj.table) == ("ice", ("a.b", "c"), "t")
    assert LockObject.of_table("db", "t").catalog is None
    assert LockObject.of_table("db", "t").namespace == ()


def test_hierarchy_is_catalog_namespace_table_partition() -> None:
    scope = LockObject.of_namespace("ice", ["a", "b"]).database
    part = LockObject.of_partition(scope, "t", {"p": 1})
    assert [a.name for a in part.ancestors()] == ["ice.", "ice.a.", "ice.a.b.", "ice.a.b.t"]
    assert [a.kind for a in part.ancestors()] == [ObjectKind.DATABASE] * 3 + [ObjectKind.TABLE]
    catalog = LockObject.of_catalog("ice")
    assert catalog.is_ancestor_of(part) and catalog.parent is None
    # SHARED on every ancestor, as Hive's rule has for a table's database
    lock_set = build_lock_set([LockRequest(part, X)])
    assert [(r.obj.name, r.mode) for r in lock_set] == [
        ("ice.", S),
        ("ice.a.", S),
        ("ice.a.b.", S),
        ("ice.a.b.t", S),
        ("ice.a.b.t@p=1", X),
    ]


@pytest.mark.parametrize(
    "hive",
    [
        LockObject.of_database("ice"),
        LockObject.of_table("ice", "db"),
        LockObject.of_table("ice", "db.t"),
        LockObject.of_database("ice.db"),
        LockObject.of_path("/tmp/ice.db.t"),
    ],
)
def test_never_collides_with_a_hive_name(hive: LockObject) -> None:
    catalog_objects = [
        LockObject.of_catalog("ice"),
        LockObject.of_namespace("ice", ["db"]),
        LockObject.of_catalog_table("ice", ["db"], "t"),
        LockObject.of_catalog_table("ice", [], "db"),
    ]
    for obj in catalog_objects:
        assert obj != hive
        assert obj.name != hive.name
        assert obj.components[0] != hive.components[0]
        assert not hive.is_ancestor_of(obj) and not obj.is_ancestor_of(hive)
    # the Hive object's own names still read back as Hive's
    assert LockObject.parse(hive.name) == hive
    assert object_from_components(hive.components) == hive


def test_a_dot_in_a_hive_name_is_escaped() -> None:
    # Hive's lock manager reads the first level as a database: a Hive object's first component
    # never ends with "." (what marks a scope level), whatever its name.
    for raw in ["a.b", "..", ".x"]:
        obj = LockObject.of_table(raw, "t.u")
        assert obj.catalog is None
        assert "." not in obj.components[0]
        assert LockObject.parse(obj.name) == obj
        assert object_from_components(obj.components) == obj
    assert LockObject.of_database("a.b").components == ("a%2Eb",)


@pytest.mark.parametrize("bad", [("", ["db"], "t"), ("ice", [""], "t"), ("ice", ["db"], "")])
def test_empty_parts_are_refused(bad: tuple[str, list[str], str]) -> None:
    catalog, namespace, table = bad
    with pytest.raises(InvalidObjectError):
        LockObject.of_catalog_table(catalog, namespace, table)


def test_metastore_components_round_trip() -> None:
    """The metastore keeps a scope as a reserved database name; SHOW LOCKS rows map back."""
    scope = LockObject.of_namespace("jdb", ["x"]).database
    for obj in [
        LockObject.of_catalog("jdb"),
        LockObject.of_namespace("jdb", ["x"]),
        LockObject.of_catalog_table("jdb", ["x"], "t"),
        LockObject.of_partition(scope, "t", {"p": "a/b"}),
        LockObject.table_writers(scope, "t"),
    ]:
        comp = mapping.component(LockRequest(obj, X))
        assert comp.dbname == mapping.metastore_database(obj)
        assert mapping.is_reserved_database(comp.dbname)

        class Row:
            dbname, tablename, partname = comp.dbname, comp.tablename, comp.partitionname

        assert mapping.row_object(Row()) == obj
