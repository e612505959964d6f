"""Facts → locks for tables of catalogs other than the session catalog (no Spark).

The JVM reports a v2 table with its catalog and its namespace (parts joined by ``.``, a part
holding ``.`` in backticks); the policy locks it as it locks a session-catalog table: reads
SHARED, writes EXCLUSIVE, DDL by its command row, every ancestor (catalog, namespaces) SHARED.
"""

from __future__ import annotations

import logging

import pytest

from sparklock.rules.facts import parse_facts
from sparklock.rules.targets import namespace_parts
from sparklock.service import LockService
from tests.support.locks import class_of


def ref(catalog: str, namespace: str | None, table: str | None, **kw: object) -> dict:
    return {"kind": "table", "catalog": catalog, "database": namespace, "table": table, **kw}


def explain(**facts: object) -> list[tuple[str, str]]:
    return LockService().explain(parse_facts({"currentDatabase": "cur", **facts}))


def command(name: str, *fields: dict, **facts: object) -> list[tuple[str, str]]:
    return explain(command=name, commandClass=class_of(name), fields=list(fields), **facts)


JDB = [("jdb.", "SHARED"), ("jdb.x.", "SHARED")]


def test_read_is_shared_on_the_table_and_its_ancestors() -> None:
    assert explain(command="Project", reads=[ref("jdb", "x", "t")]) == [
        *JDB,
        ("jdb.x.t", "SHARED"),
    ]


def test_v2_write_is_exclusive_on_the_table() -> None:
    write = {**ref("jdb", "x", "t"), "fileBased": False}
    reads = [ref("jdb", "x", "s")]
    assert explain(command="AppendData", writes=[write], reads=reads) == [
        *JDB,
        ("jdb.x.s", "SHARED"),
        ("jdb.x.t", "EXCLUSIVE"),
    ]


def test_v2_file_table_write_takes_the_writers_facet_as_session_tables_do() -> None:
    write = {**ref("cat", "x", "t"), "fileBased": True}
    assert explain(command="AppendData", writes=[write]) == [
        ("cat.", "SHARED"),
        ("cat.x.", "SHARED"),
        ("cat.x.t", "EXCLUSIVE"),
        ("cat.x.t@_sparklock_writers", "EXCLUSIVE"),
    ]


def test_identity_partition_write_locks_the_partition() -> None:
    write = {
        **ref("ice", "db", "t", partitionColumns=["p"]),
        "rowConstraints": {"p": ["1"]},
    }
    assert explain(command="AppendData", writes=[write]) == [
        ("ice.", "SHARED"),
        ("ice.db.", "SHARED"),
        ("ice.db.t", "SHARED"),
        ("ice.db.t@p=1", "EXCLUSIVE"),
    ]


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("CreateTable", "name"),
        ("DropTable", "child"),
        ("ReplaceTable", "name"),
        ("DeleteFromTable", "table"),
        ("UpdateTable", "table"),
        ("AddColumns", "table"),
        ("MergeIntoTable", "targetTable"),
        ("ReplaceData", "table"),
        ("WriteDelta", "table"),
        ("OverwriteByExpression", "table"),
        ("OverwritePartitionsDynamic", "table"),
    ],
)
def test_v2_commands_lock_their_table_exclusive(name: str, field: str) -> None:
    # a row-level rewrite (ReplaceData, WriteDelta) also reads its table: EXCLUSIVE wins
    reads = [ref("jdb", "x", "t")]
    locked = command(name, {**ref("jdb", "x", "t"), "name": field}, reads=reads)
    assert locked == [*JDB, ("jdb.x.t", "EXCLUSIVE")]


@pytest.mark.parametrize("name", ["ReplaceData", "WriteDelta"])
def test_a_row_level_write_pinned_to_identity_partitions_locks_them(name: str) -> None:
    # the JVM reports the rows it deletes and writes as constraints on the table's identity
    # partition columns; the table is SHARED, each pinned partition EXCLUSIVE
    table = {**ref("ice", "db", "t"), "name": "table"}
    original = {**ref("ice", "db", "t", partitionColumns=["p"]), "name": "originalTable"}
    pins = {
        "kind": "constraints",
        "name": "writtenRows",
        "partitionColumns": ["p"],
        "values": {"p": ["a", "b"], "id": ["1"]},
    }
    assert command(name, table, original, pins) == [
        ("ice.", "SHARED"),
        ("ice.db.", "SHARED"),
        ("ice.db.t", "SHARED"),
        ("ice.db.t@p=a", "EXCLUSIVE"),
        ("ice.db.t@p=b", "EXCLUSIVE"),
    ]
    # no constraint on a partition column: the whole table
    assert command(name, table, original, {**pins, "values": {"id": ["1"]}})[-1] == (
        "ice.db.t",
        "EXCLUSIVE",
    )


def test_rename_stays_in_the_catalog_and_namespace_of_the_old_name() -> None:
    old = {**ref("jdb", "x", "t"), "name": "child"}
    new = {**ref("spark_catalog", None, "t2"), "name": "newName"}
    assert command("RenameTable", old, new) == [
        *JDB,
        ("jdb.x.t", "EXCLUSIVE"),
        ("jdb.x.t2", "EXCLUSIVE"),
    ]


def test_namespaces_of_any_depth() -> None:
    assert command(
        "DropNamespace",
        {"name": "namespace", "kind": "database", "catalog": "jdb", "database": "a.`b.c`"},
    ) == [
        ("jdb.", "SHARED"),
        ("jdb.a.", "SHARED"),
        ("jdb.a.b%2Ec.", "EXCLUSIVE"),
    ]
    assert explain(command="Project", reads=[ref("ice", "a.b", "t")])[-1] == ("ice.a.b.t", "SHARED")


def test_temporary_views_stay_lock_free() -> None:
    assert explain(command="Project", reads=[ref("jdb", "x", "v", isTemp=True)]) == []


def test_a_table_its_catalog_cannot_name_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sparklock"):
        locked = explain(command="Project", reads=[ref("odd", None, None)])
    assert locked == [("odd.", "EXCLUSIVE")]
    assert "names no table" in caplog.text


def test_session_catalog_names_are_unchanged() -> None:
    assert explain(command="Project", reads=[ref("spark_catalog", "db", "t")]) == [
        ("db", "SHARED"),
        ("db@t", "SHARED"),
    ]


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        (None, ()),
        ("x", ("x",)),
        ("a.b", ("a", "b")),
        ("a.`b.c`", ("a", "b.c")),
        ("`a``b`.c", ("a`b", "c")),
    ],
)
def test_namespace_parts_read_spark_quoting(text: str | None, parts: tuple[str, ...]) -> None:
    assert namespace_parts(text) == parts
