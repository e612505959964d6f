"""The command table on the facts layer (no Spark): each row locks what the seed's table says."""

from __future__ import annotations

import logging

import pytest

from sparklock.rules.command_classes import FAIL_SAFE
from sparklock.rules.commands import RULES
from sparklock.rules.facts import parse_facts
from sparklock.service import LockService
from tests.support.locks import class_of


def tref(name, field, db="default", **kw):
    return {
        "name": field,
        "kind": "table",
        "catalog": "spark_catalog",
        "database": db,
        "table": name,
        **kw,
    }


def specs(field, *specs):
    return {"name": field, "kind": "partitionSpecs", "specs": list(specs)}


def db(field, name):
    return {"name": field, "kind": "database", "database": name}


def locks(command, *fields, reads=()):
    facts = {
        "command": command,
        "commandClass": class_of(command),
        "fields": list(fields),
        "reads": list(reads),
        "currentDatabase": "cur",
    }
    return [r for r in LockService().explain(parse_facts(facts))]


PT = {"partitionColumns": ["p"]}
PATH_X = "_sparklock-paths@file%3A%2Fd%2Fx"


def path(field, p, owner=None):
    return {"name": field, "kind": "path", "path": f"file:{p}", "ownerTable": owner}


def owned_path(field, table):
    owner = {
        "catalog": "spark_catalog",
        "database": "default",
        "table": table,
        "partitionColumns": [],
        "partition": {},
    }
    return path(field, f"/wh/{table}", owner)


@pytest.mark.parametrize(
    "command,fields,expected",
    [
        ("DropTable", [tref("t", "child")], [("default@t", "EXCLUSIVE")]),
        ("DropTableCommand", [tref("t", "tableName")], [("default@t", "EXCLUSIVE")]),
        (
            "AlterTableRenameCommand",
            [tref("t", "oldName"), tref("t2", "newName", db="cur")],
            [("default@t", "EXCLUSIVE"), ("default@t2", "EXCLUSIVE")],
        ),
        (  # renaming a temporary view: neither name is a catalog object
            "AlterTableRenameCommand",
            [tref("tv", "oldName", isTemp=True), tref("tv2", "newName", db="cur")],
            [],
        ),
        (
            "RenameTable",
            [tref("t", "child", db="d2"), tref("t2", "newName", db="cur")],
            [("d2@t", "EXCLUSIVE"), ("d2@t2", "EXCLUSIVE")],
        ),
        (  # with no table reported at the old name, the new name as reported
            "RenameTable",
            [tref("t2", "newName", db="cur")],
            [("cur@t2", "EXCLUSIVE")],
        ),
        (
            "CreateTempViewUsing",
            [tref("tv", "tableIdent"), owned_path("options", "t")],
            [("default@t", "SHARED")],
        ),
        ("CreateTempViewUsing", [path("options", "/d/x")], [(PATH_X, "SHARED")]),
        (
            "SaveIntoDataSourceCommand",
            [owned_path("options", "t"), {"name": "mode", "kind": "value", "value": "Overwrite"}],
            [("default@t", "EXCLUSIVE")],
        ),
        ("SaveIntoDataSourceCommand", [path("options", "/d/x")], [(PATH_X, "EXCLUSIVE")]),
        ("TruncateTableCommand", [tref("t", "tableName")], [("default@t", "EXCLUSIVE")]),
        (
            "TruncateTableCommand",
            [tref("t", "tableName", **PT), specs("partitionSpec", {"p": "1"})],
            [("default@t", "SHARED"), ("default@t@p=1", "EXCLUSIVE")],
        ),
        ("AlterTableAddColumnsCommand", [tref("t", "table")], [("default@t", "EXCLUSIVE")]),
        ("AlterTableChangeColumnCommand", [tref("t", "tableName")], [("default@t", "EXCLUSIVE")]),
        ("AlterTableSetPropertiesCommand", [tref("t", "tableName")], [("default@t", "EXCLUSIVE")]),
        (
            "AlterTableUnsetPropertiesCommand",
            [tref("t", "tableName")],
            [("default@t", "EXCLUSIVE")],
        ),
        ("AlterTableSetLocationCommand", [tref("t", "tableName")], [("default@t", "EXCLUSIVE")]),
        (
            "AlterTableAddPartitionCommand",
            [tref("t", "tableName", **PT), specs("partitionSpecsAndLocs", {"p": "1"}, {"p": "2"})],
            [
                ("default@t", "SHARED"),
                ("default@t@p=1", "EXCLUSIVE"),
                ("default@t@p=2", "EXCLUSIVE"),
            ],
        ),
        (
            "AlterTableDropPartitionCommand",
            [tref("t", "tableName", **PT), specs("specs", {"p": "1"})],
            [("default@t", "SHARED"), ("default@t@p=1", "EXCLUSIVE")],
        ),
        (
            "AlterTableRenamePartitionCommand",
            [
                tref("t", "tableName", **PT),
                specs("oldPartition", {"p": "1"}),
                specs("newPartition", {"p": "3"}),
            ],
            [
                ("default@t", "SHARED"),
                ("default@t@p=1", "EXCLUSIVE"),
                ("default@t@p=3", "EXCLUSIVE"),
            ],
        ),
        ("AlterTableSerDePropertiesCommand", [tref("t", "tableName")], [("default@t", "SHARED")]),
        ("CreateDataSourceTableCommand", [tref("n", "table")], [("default@n", "EXCLUSIVE")]),
        (
            "CreateTableLikeCommand",
            [tref("n", "targetTable"), tref("t", "sourceTable")],
            [("default@n", "EXCLUSIVE"), ("default@t", "SHARED")],
        ),
        (
            "LoadDataCommand",
            [tref("t", "table", **PT), specs("partition", {"p": "1"})],
            [("default@t", "SHARED"), ("default@t@p=1", "EXCLUSIVE")],
        ),
        ("LoadDataCommand", [tref("t", "table")], [("default@t", "EXCLUSIVE")]),
        ("AnalyzeTableCommand", [tref("t", "tableIdent")], [("default@t", "SHARED")]),
        ("RefreshTableCommand", [tref("t", "tableIdent")], [("default@t", "SHARED")]),
        ("RepairTableCommand", [tref("t", "tableName")], [("default@t", "EXCLUSIVE")]),
        ("CreateNamespace", [db("name", "d3")], [("d3", "EXCLUSIVE")]),
        ("DropNamespace", [db("namespace", "d2")], [("d2", "EXCLUSIVE")]),
        ("SetNamespaceProperties", [db("namespace", "d2")], [("d2", "EXCLUSIVE")]),
        # Delta, field names as in delta-io/delta: DeleteCommand(deltaLog, catalogTable, target,
        # condition), UpdateCommand(tahoeFileIndex, catalogTable, target, ...),
        # MergeIntoCommand(source, target, catalogTable, targetFileIndex, ...),
        # OptimizeTableCommand(child, ...), VacuumTableCommand(child, ...),
        # RestoreTableCommand(sourceTable: DeltaTableV2), WriteIntoDelta(deltaLog, ...,
        # catalogTableOpt, ...); a DeltaLog / TahoeFileIndex is reported as its path, owned by t
        (
            "DeleteCommand",
            [tref("t", "catalogTable"), tref("t", "target"), owned_path("deltaLog", "t")],
            [("default@t", "EXCLUSIVE")],
        ),
        ("DeleteCommand", [path("deltaLog", "/d/x")], [(PATH_X, "EXCLUSIVE")]),
        (
            "UpdateCommand",
            [tref("t", "catalogTable"), tref("t", "target"), owned_path("tahoeFileIndex", "t")],
            [("default@t", "EXCLUSIVE")],
        ),
        ("UpdateCommand", [path("tahoeFileIndex", "/d/x")], [(PATH_X, "EXCLUSIVE")]),
        (  # a file index with two roots: two fields of one name, both locked
            "UpdateCommand",
            [path("tahoeFileIndex", "/d/x"), path("tahoeFileIndex", "/d/y")],
            [(PATH_X, "EXCLUSIVE"), (PATH_X[:-1] + "y", "EXCLUSIVE")],
        ),
        (
            "MergeIntoCommand",
            [tref("t", "target"), tref("t", "catalogTable"), owned_path("targetFileIndex", "t")],
            [("default@t", "EXCLUSIVE")],
        ),
        ("OptimizeTableCommand", [tref("t", "child")], [("default@t", "EXCLUSIVE")]),
        ("OptimizeTableCommand", [path("child", "/d/x")], [(PATH_X, "EXCLUSIVE")]),
        ("VacuumTableCommand", [tref("t", "child")], [("default@t", "EXCLUSIVE")]),
        ("RestoreTableCommand", [tref("t", "sourceTable")], [("default@t", "EXCLUSIVE")]),
        (
            "WriteIntoDelta",
            [tref("t", "catalogTableOpt"), owned_path("deltaLog", "t")],
            [("default@t", "EXCLUSIVE")],
        ),
        ("WriteIntoDelta", [path("deltaLog", "/d/x")], [(PATH_X, "EXCLUSIVE")]),
        ("ReplaceColumns", [tref("t", "table")], [("default@t", "EXCLUSIVE")]),
        ("SaveAsV1TableCommand", [tref("n", "tableDesc")], [("default@n", "EXCLUSIVE")]),
        ("ShowCreateTable", [tref("t", "child")], [("default@t", "SHARED")]),
        ("ShowTableProperties", [tref("t", "table")], [("default@t", "SHARED")]),
        ("DescribeNamespace", [db("namespace", "d2")], [("d2", "SHARED")]),
        ("ShowTablesCommand", [db("databaseName", "d2")], [("d2", "SHARED")]),
        ("DeleteFromTable", [tref("t", "table")], [("default@t", "EXCLUSIVE")]),
        ("UpdateTable", [tref("t", "table")], [("default@t", "EXCLUSIVE")]),
        ("MergeIntoTable", [tref("t", "targetTable")], [("default@t", "EXCLUSIVE")]),
        ("ShowTables", [db("namespace", "default")], []),
    ],
)
def test_command_rows(command, fields, expected):
    ancestors = {(n, "SHARED") for n in ("default", "cur", "d2", "_sparklock-paths")}
    got = [r for r in locks(command, *fields) if r not in ancestors or r in expected]
    assert got == expected


def test_view_locks_view_and_reads():
    rows = locks(
        "CreateViewCommand",
        tref("v", "name"),
        {"name": "viewType", "kind": "value", "value": "PersistedView"},
        reads=[{"kind": "table", "database": "default", "table": "t"}],
    )
    assert ("default@v", "EXCLUSIVE") in rows and ("default@t", "SHARED") in rows
    temp = locks(
        "CreateViewCommand",
        tref("tv", "name"),
        {"name": "viewType", "kind": "value", "value": "LocalTempView"},
        reads=[{"kind": "table", "database": "default", "table": "t"}],
    )
    assert temp == [("default", "SHARED"), ("default@t", "SHARED")]


def test_merge_locks_source_shared():
    rows = locks(
        "MergeIntoCommand",
        tref("t", "target"),
        reads=[
            {"kind": "table", "database": "default", "table": "s"},
            {"kind": "table", "database": "default", "table": "t"},
        ],
    )
    assert dict(rows) == {"default": "SHARED", "default@s": "SHARED", "default@t": "EXCLUSIVE"}


def test_unknown_command_fails_safe_and_logs(caplog):
    with caplog.at_level(logging.WARNING, logger="sparklock"):
        rows = locks("SomeFutureCommand", tref("t", "whatever"), db("ns", "d9"))
    assert ("default@t", "EXCLUSIVE") in rows and ("d9", "EXCLUSIVE") in rows
    assert "SomeFutureCommand" in caplog.text


def test_every_rule_names_distinct_command():
    assert len({r.command for r in RULES}) == len(RULES)


def test_a_command_out_of_every_table_locks_what_it_names_and_says_so(caplog):
    """An unknown class: EXCLUSIVE on what it names, and a WARNING naming the class; a class
    listed as fail-safe on purpose gets the same locks without the warning."""
    unknown = "org.example.FreshCommand"
    with caplog.at_level(logging.WARNING, logger="sparklock"):
        got = locks(unknown, tref("t", "name"))
    assert ("default@t", "EXCLUSIVE") in got
    assert unknown in caplog.text
    caplog.clear()
    fail_safe = "org.apache.spark.sql.catalyst.plans.logical.CommentOnTable"
    assert fail_safe in FAIL_SAFE
    with caplog.at_level(logging.WARNING, logger="sparklock"):
        assert locks(fail_safe, tref("t", "name")) == got
    assert "not in the command table" not in caplog.text
