"""The command table: Spark command class → which of its fields are locked, in which mode.

One row per analysed command class of Spark 4.x (v1 commands, v2 logical plans, Hive, Delta), read
as data, in the spirit of Kyuubi's authz table: the JVM reports the root command's table-valued
fields by name, this table says what each field means. What the plan *reads* (queries inside CTAS,
views, MERGE sources) is locked SHARED by the read rules in ``policy``; the rows here add the
command's own targets. The README's command table is generated from these rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import LockMode

S, X = LockMode.SHARED, LockMode.EXCLUSIVE


@dataclass(frozen=True)
class Target:
    """One field of a command and the lock it takes.

    ``field``: the case-class field name the JVM reports. ``mode``: the lock on the table/database
    named there. ``partitions``: a field holding partition spec(s) of that table; when it holds any,
    the table gets SHARED and each partition ``partition_mode`` instead (Hive's partition DDL rule).
    """

    field: str
    mode: LockMode
    partitions: str | None = None
    partition_mode: LockMode = X


@dataclass(frozen=True)
class CommandRule:
    command: str
    targets: tuple[Target, ...]
    statement: str  # how users write it (README)
    note: str = ""


def _rule(command: str, statement: str, *targets: Target, note: str = "") -> CommandRule:
    return CommandRule(command, tuple(targets), statement, note)


# Spark SQL (session catalog; class names as analysed by Spark 4.x)
RULES: tuple[CommandRule, ...] = (
    _rule("DropTable", "DROP TABLE t", Target("child", X)),
    _rule("DropTableCommand", "DROP TABLE / DROP VIEW t", Target("tableName", X)),
    _rule(
        "AlterTableRenameCommand",
        "ALTER TABLE|VIEW t RENAME TO t2",
        Target("oldName", X),
        Target("newName", X),
    ),
    _rule(
        "TruncateTableCommand",
        "TRUNCATE TABLE t [PARTITION (...)]",
        Target("tableName", X, partitions="partitionSpec"),
    ),
    _rule("AlterTableAddColumnsCommand", "ALTER TABLE t ADD COLUMNS", Target("table", X)),
    _rule("AlterTableChangeColumnCommand", "ALTER TABLE t CHANGE COLUMN", Target("tableName", X)),
    _rule("ReplaceColumns", "ALTER TABLE t REPLACE COLUMNS (v2 tables)", Target("table", X)),
    _rule(
        "AlterTableSetPropertiesCommand", "ALTER TABLE t SET TBLPROPERTIES", Target("tableName", X)
    ),
    _rule(
        "AlterTableUnsetPropertiesCommand",
        "ALTER TABLE t UNSET TBLPROPERTIES",
        Target("tableName", X),
    ),
    _rule(
        "AlterTableSetLocationCommand",
        "ALTER TABLE t [PARTITION (...)] SET LOCATION",
        Target("tableName", X, partitions="partitionSpec"),
    ),
    _rule(
        "AlterTableAddPartitionCommand",
        "ALTER TABLE t ADD PARTITION (...)",
        Target("tableName", S, partitions="partitionSpecsAndLocs"),
    ),
    _rule(
        "AlterTableDropPartitionCommand",
        "ALTER TABLE t DROP PARTITION (...)",
        Target("tableName", S, partitions="specs"),
    ),
    _rule(
        "AlterTableRenamePartitionCommand",
        "ALTER TABLE t PARTITION (...) RENAME TO PARTITION",
        Target("tableName", S, partitions="oldPartition"),
        Target("tableName", S, partitions="newPartition"),
    ),
    _rule(
        "AlterTableSerDePropertiesCommand",
        "ALTER TABLE t SET SERDE|SERDEPROPERTIES",
        Target("tableName", S, partitions="partSpec", partition_mode=S),
    ),
    _rule("CreateDataSourceTableCommand", "CREATE TABLE t USING ...", Target("table", X)),
    _rule("CreateTableCommand", "CREATE TABLE t ... STORED AS (Hive)", Target("table", X)),
    _rule(
        "CreateDataSourceTableAsSelectCommand",
        "CREATE TABLE t USING ... AS SELECT",
        Target("table", X),
    ),
    _rule(
        "CreateHiveTableAsSelectCommand",
        "CREATE TABLE t STORED AS ... AS SELECT",
        Target("tableDesc", X),
    ),
    _rule(
        "OptimizedCreateHiveTableAsSelectCommand",
        "CREATE TABLE t STORED AS ... AS SELECT",
        Target("tableDesc", X),
    ),
    _rule(
        "SaveAsV1TableCommand",
        "df.write.saveAsTable('t') (new table or overwrite)",
        Target("tableDesc", X),
    ),
    _rule(
        "CreateTableLikeCommand",
        "CREATE TABLE t LIKE s",
        Target("targetTable", X),
        Target("sourceTable", S),
    ),
    _rule(
        "CreateViewCommand",
        "CREATE [OR REPLACE] VIEW v AS ...",
        Target("name", X),
        note="temporary views lock only what they read",
    ),
    _rule("AlterViewAsCommand", "ALTER VIEW v AS ...", Target("name", X)),
    _rule(
        "LoadDataCommand",
        "LOAD DATA ... INTO TABLE t [PARTITION (...)]",
        Target("table", X, partitions="partition"),
    ),
    _rule("AnalyzeTableCommand", "ANALYZE TABLE t COMPUTE STATISTICS", Target("tableIdent", S)),
    _rule(
        "AnalyzePartitionCommand",
        "ANALYZE TABLE t PARTITION (...) COMPUTE STATISTICS",
        Target("tableIdent", S, partitions="partitionSpec", partition_mode=S),
    ),
    _rule(
        "AnalyzeColumnCommand",
        "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS",
        Target("tableIdent", S),
    ),
    _rule("AnalyzeTablesCommand", "ANALYZE TABLES IN db", Target("databaseName", S)),
    _rule("RefreshTableCommand", "REFRESH TABLE t", Target("tableIdent", S)),
    _rule("RefreshTable", "REFRESH TABLE t (v2)", Target("child", S)),
    _rule("CacheTable", "CACHE TABLE t", note="SHARED on what it reads"),
    _rule("CacheTableAsSelect", "CACHE TABLE c AS SELECT", note="SHARED on what it reads"),
    _rule("UncacheTable", "UNCACHE TABLE t", note="SHARED on what it reads"),
    _rule(
        "RepairTableCommand",
        "MSCK REPAIR TABLE t / ALTER TABLE t RECOVER PARTITIONS",
        Target("tableName", X),
    ),
    _rule("CreateNamespace", "CREATE DATABASE db", Target("name", X)),
    _rule("DropNamespace", "DROP DATABASE db", Target("namespace", X)),
    _rule("SetNamespaceProperties", "ALTER DATABASE db SET DBPROPERTIES", Target("namespace", X)),
    _rule("SetNamespaceLocation", "ALTER DATABASE db SET LOCATION", Target("namespace", X)),
    _rule("CreateDatabaseCommand", "CREATE DATABASE db (v1)", Target("databaseName", X)),
    _rule("DropDatabaseCommand", "DROP DATABASE db (v1)", Target("databaseName", X)),
    _rule(
        "AlterDatabasePropertiesCommand",
        "ALTER DATABASE db SET DBPROPERTIES (v1)",
        Target("databaseName", X),
    ),
    _rule(
        "AlterDatabaseSetLocationCommand",
        "ALTER DATABASE db SET LOCATION (v1)",
        Target("databaseName", X),
    ),
    # metadata reads
    _rule("DescribeTableCommand", "DESCRIBE TABLE t", Target("table", S)),
    _rule("DescribeColumnCommand", "DESCRIBE TABLE t col", Target("table", S)),
    _rule("ShowPartitionsCommand", "SHOW PARTITIONS t", Target("tableName", S)),
    _rule("ShowCreateTableCommand", "SHOW CREATE TABLE t", Target("table", S)),
    _rule("ShowColumnsCommand", "SHOW COLUMNS IN t", Target("tableName", S)),
    _rule("ShowTablePropertiesCommand", "SHOW TBLPROPERTIES t", Target("table", S)),
    _rule("ShowTableProperties", "SHOW TBLPROPERTIES t (v2)", Target("table", S)),
    _rule("ShowCreateTable", "SHOW CREATE TABLE t (v2)", Target("child", S)),
    _rule("ShowCreateTableAsSerdeCommand", "SHOW CREATE TABLE t AS SERDE", Target("table", S)),
    _rule("DescribeNamespace", "DESCRIBE DATABASE db", Target("namespace", S)),
    _rule("ShowTablesCommand", "SHOW TABLE EXTENDED [IN db] LIKE ...", Target("databaseName", S)),
    _rule("ShowViewsCommand", "SHOW VIEWS [IN db]", Target("databaseName", S)),
    _rule(
        "AlterViewSchemaBindingCommand", "ALTER VIEW v WITH SCHEMA BINDING|...", Target("name", X)
    ),
    # Delta Lake (delta-spark), by their analysed command classes; field names as in
    # delta-io/delta (spark/src/main/scala/org/apache/spark/sql/delta/commands, io/delta/tables/
    # execution). A catalog table and the path of its Delta log name the same table; a path-based
    # table (delta.`/p`) is locked by path (the table owning it, else a path object).
    _rule(
        "DeleteCommand",
        "DELETE FROM t (Delta)",
        Target("catalogTable", X),
        Target("target", X),
        Target("deltaLog", X),
    ),
    _rule(
        "UpdateCommand",
        "UPDATE t (Delta)",
        Target("catalogTable", X),
        Target("target", X),
        Target("tahoeFileIndex", X),
    ),
    _rule(
        "MergeIntoCommand",
        "MERGE INTO t USING s (Delta)",
        Target("catalogTable", X),
        Target("target", X),
        Target("targetFileIndex", X),
        note="SHARED on the source",
    ),
    _rule("OptimizeTableCommand", "OPTIMIZE t (Delta)", Target("child", X)),
    _rule("VacuumTableCommand", "VACUUM t (Delta)", Target("child", X)),
    _rule(
        "RestoreTableCommand", "RESTORE TABLE t TO VERSION AS OF (Delta)", Target("sourceTable", X)
    ),
    _rule(
        "WriteIntoDelta",
        "df.write.format('delta') (Delta)",
        Target("catalogTableOpt", X),
        Target("deltaLog", X),
    ),
    _rule("DeleteFromTable", "DELETE FROM t (v2)", Target("table", X)),
    _rule("UpdateTable", "UPDATE t (v2)", Target("table", X)),
    _rule(
        "MergeIntoTable",
        "MERGE INTO t USING s (v2)",
        Target("targetTable", X),
        note="SHARED on the source",
    ),
)

BY_COMMAND: dict[str, CommandRule] = {r.command: r for r in RULES}

# Commands that touch no table or database: never locked, never "unrecognised".
NO_LOCK_COMMANDS = frozenset(
    {
        "SetCommand",
        "ResetCommand",
        "ShowTables",
        "ShowNamespaces",
        "ShowFunctions",
        "ShowViews",
        "ShowCatalogsCommand",
        "SetCatalogAndNamespace",
        "SetNamespaceCommand",
        "ExplainCommand",
        "DescribeFunctionCommand",
        "CreateFunctionCommand",
        "DropFunctionCommand",
        "AddJarsCommand",
        "AddFilesCommand",
        "AddArchivesCommand",
        "ClearCacheCommand",
        "RefreshResource",
        "ListFilesCommand",
        "ListJarsCommand",
        "ListArchivesCommand",
        "SetVariable",
        "CreateVariable",
        "DropVariable",
    }
)


def _describe(rule: CommandRule) -> str:
    parts = []
    for t in rule.targets:
        if t.partitions:
            parts.append(
                f"{t.mode.value} `{t.field}`, or SHARED table + {t.partition_mode.value} "
                f"partitions of `{t.partitions}`"
            )
        else:
            parts.append(f"{t.mode.value} `{t.field}`")
    text = "; ".join(parts) or "—"
    return f"{text} ({rule.note})" if rule.note else text


def markdown_table() -> str:
    """The README's command table, generated from ``RULES`` so the two cannot drift."""
    lines = [
        "| statement | command class | locks (besides SHARED on everything it reads) |",
        "|---|---|---|",
    ]
    for r in RULES:
        lines.append(f"| `{r.statement}` | `{r.command}` | {_describe(r)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown_table())
