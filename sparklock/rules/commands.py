"""The command table: Spark command class → which of its fields are locked, in which mode.

One row per analysed command class of Spark 4.x (v1 commands, v2 logical plans, Hive, Delta), read
as data, in the spirit of Kyuubi's authz table, keyed by full class name: the JVM reports the root
command's table-valued fields by name, this table says what each field means. What the plan
*reads* (queries inside CTAS, views, MERGE sources) is locked SHARED by the read rules in
``policy``; the rows here add the command's own targets. Every other command class of Spark is on
the no-lock or the fail-safe list of ``command_classes`` (a test enumerates Spark's jars). The
docs' statement table and lists are generated from here by ``command_docs``
(``python3 -m sparklock.docs_pages --write``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..locks.model import LockMode
from .command_classes import NO_LOCK, simple_name
from .delta import ROWS as DELTA_ROWS

S, X = LockMode.SHARED, LockMode.EXCLUSIVE

_LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
_COMMAND = "org.apache.spark.sql.execution.command."
_SOURCES = "org.apache.spark.sql.execution.datasources."
_HIVE = "org.apache.spark.sql.hive.execution."
_DELTA = "org.apache.spark.sql.delta.commands."
_STREAMING = "org.apache.spark.sql.execution.streaming.sources."

# What the write rule locks for the classes the JVM reports under "writes" (see ``policy``)
_WRITE_RULE = "EXCLUSIVE on what it writes: the write rule"
# A v2 write into a relation the JVM cannot report as a write falls back to its "table" field
_V2_WRITE_RULE = _WRITE_RULE + "; the `table` target only if not reported as a write"


@dataclass(frozen=True)
class Target:
    """One field of a command and the lock it takes.

    ``field``: the case-class field name the JVM reports. ``mode``: the lock on the table, database
    or path named there. ``partitions``: a field holding partition spec(s) of that table; when it
    holds any, the table gets SHARED and each partition ``partition_mode`` instead (Hive's
    partition DDL rule). ``database_from``: a field whose catalog and database the name lives in,
    whatever the statement spelled (a rename's new name: Spark renames within the old name's
    database); a temporary view there makes this one temporary too (no lock).
    """

    field: str
    mode: LockMode
    partitions: str | None = None
    partition_mode: LockMode = X
    database_from: str | None = None


@dataclass(frozen=True)
class FieldIs:
    """A condition on a scalar field of the command: its value is one of ``values``."""

    field: str
    values: frozenset[str]

    def __str__(self) -> str:
        return f"`{self.field}` is {' or '.join(sorted(self.values))}"


@dataclass(frozen=True)
class CommandRule:
    """One row: ``class_name`` is the full class name, ``command`` its simple name."""

    class_name: str
    targets: tuple[Target, ...]
    statement: str  # how users write it (docs/statements.md)
    note: str = ""
    #: no lock of the command's own when this holds (a temporary view's CREATE VIEW)
    no_lock_when: FieldIs | None = None

    @property
    def command(self) -> str:
        return simple_name(self.class_name)


def _rule(
    class_name: str,
    statement: str,
    *targets: Target,
    note: str = "",
    no_lock_when: FieldIs | None = None,
) -> CommandRule:
    return CommandRule(class_name, tuple(targets), statement, note, no_lock_when)


TEMP_VIEW = FieldIs("viewType", frozenset({"LocalTempView", "GlobalTempView"}))


# Spark SQL (session catalog; class names as analysed by Spark 4.x)
RULES: tuple[CommandRule, ...] = (
    _rule(_LOGICAL + "DropTable", "DROP TABLE t", Target("child", X)),
    _rule(_COMMAND + "DropTableCommand", "DROP TABLE / DROP VIEW t", Target("tableName", X)),
    _rule(
        _COMMAND + "AlterTableRenameCommand",
        "ALTER TABLE|VIEW t RENAME TO t2",
        Target("oldName", X),
        Target("newName", X, database_from="oldName"),
    ),
    _rule(
        _LOGICAL + "RenameTable",
        "ALTER TABLE|VIEW t RENAME TO t2 (v2)",
        Target("child", X),
        Target("newName", X, database_from="child"),
    ),
    _rule(
        _COMMAND + "TruncateTableCommand",
        "TRUNCATE TABLE t [PARTITION (...)]",
        Target("tableName", X, partitions="partitionSpec"),
    ),
    _rule(
        _COMMAND + "AlterTableAddColumnsCommand", "ALTER TABLE t ADD COLUMNS", Target("table", X)
    ),
    _rule(
        _COMMAND + "AlterTableChangeColumnCommand",
        "ALTER TABLE t CHANGE COLUMN",
        Target("tableName", X),
    ),
    _rule(
        _COMMAND + "AlterTableChangeColumnCommentsCommand",
        "ALTER TABLE t ALTER COLUMN ... COMMENT (Spark 4.3)",
        Target("tableName", X),
    ),
    _rule(
        _LOGICAL + "ReplaceColumns", "ALTER TABLE t REPLACE COLUMNS (v2 tables)", Target("table", X)
    ),
    _rule(
        _COMMAND + "AlterTableSetPropertiesCommand",
        "ALTER TABLE t SET TBLPROPERTIES",
        Target("tableName", X),
    ),
    _rule(
        _COMMAND + "AlterTableUnsetPropertiesCommand",
        "ALTER TABLE t UNSET TBLPROPERTIES",
        Target("tableName", X),
    ),
    _rule(
        _COMMAND + "AlterTableSetLocationCommand",
        "ALTER TABLE t [PARTITION (...)] SET LOCATION",
        Target("tableName", X, partitions="partitionSpec"),
    ),
    _rule(
        _COMMAND + "AlterTableAddPartitionCommand",
        "ALTER TABLE t ADD PARTITION (...)",
        Target("tableName", S, partitions="partitionSpecsAndLocs"),
    ),
    _rule(
        _COMMAND + "AlterTableDropPartitionCommand",
        "ALTER TABLE t DROP PARTITION (...)",
        Target("tableName", S, partitions="specs"),
    ),
    _rule(
        _COMMAND + "AlterTableRenamePartitionCommand",
        "ALTER TABLE t PARTITION (...) RENAME TO PARTITION",
        Target("tableName", S, partitions="oldPartition"),
        Target("tableName", S, partitions="newPartition"),
    ),
    _rule(
        _COMMAND + "AlterTableSerDePropertiesCommand",
        "ALTER TABLE t SET SERDE|SERDEPROPERTIES",
        Target("tableName", S, partitions="partSpec", partition_mode=S),
    ),
    _rule(
        _COMMAND + "CreateDataSourceTableCommand", "CREATE TABLE t USING ...", Target("table", X)
    ),
    _rule(
        _COMMAND + "CreateTableCommand", "CREATE TABLE t ... STORED AS (Hive)", Target("table", X)
    ),
    _rule(
        _COMMAND + "CreateDataSourceTableAsSelectCommand",
        "CREATE TABLE t USING ... AS SELECT",
        Target("table", X),
    ),
    _rule(
        _HIVE + "CreateHiveTableAsSelectCommand",
        "CREATE TABLE t STORED AS ... AS SELECT",
        Target("tableDesc", X),
    ),
    _rule(
        _HIVE + "OptimizedCreateHiveTableAsSelectCommand",
        "CREATE TABLE t STORED AS ... AS SELECT (Spark 3.5)",
        Target("tableDesc", X),
    ),
    _rule(
        _COMMAND + "SaveAsV1TableCommand",
        "df.write.saveAsTable('t') (new table or overwrite)",
        Target("tableDesc", X),
    ),
    _rule(
        _COMMAND + "CreateTableLikeCommand",
        "CREATE TABLE t LIKE s",
        Target("targetTable", X),
        Target("sourceTable", S),
    ),
    _rule(
        _COMMAND + "CreateViewCommand",
        "CREATE [OR REPLACE] VIEW v AS ...",
        Target("name", X),
        note="temporary views lock only what they read",
        no_lock_when=TEMP_VIEW,
    ),
    _rule(
        _SOURCES + "CreateTempViewUsing",
        "CREATE TEMPORARY VIEW v USING ... OPTIONS (path ...)",
        Target("options", S),
        note="its `path` option and each of its `paths` is what it reads: the table owning it, "
        "else the path",
    ),
    _rule(_COMMAND + "AlterViewAsCommand", "ALTER VIEW v AS ...", Target("name", X)),
    _rule(
        _COMMAND + "LoadDataCommand",
        "LOAD DATA ... INTO TABLE t [PARTITION (...)]",
        Target("table", X, partitions="partition"),
    ),
    _rule(
        _COMMAND + "AnalyzeTableCommand",
        "ANALYZE TABLE t COMPUTE STATISTICS",
        Target("tableIdent", S),
    ),
    _rule(
        _COMMAND + "AnalyzePartitionCommand",
        "ANALYZE TABLE t PARTITION (...) COMPUTE STATISTICS",
        Target("tableIdent", S, partitions="partitionSpec", partition_mode=S),
    ),
    _rule(
        _COMMAND + "AnalyzeColumnCommand",
        "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS",
        Target("tableIdent", S),
    ),
    _rule(_COMMAND + "AnalyzeTablesCommand", "ANALYZE TABLES IN db", Target("databaseName", S)),
    _rule(_COMMAND + "RefreshTableCommand", "REFRESH TABLE t", Target("tableIdent", S)),
    _rule(_LOGICAL + "RefreshTable", "REFRESH TABLE t (v2)", Target("child", S)),
    _rule(_LOGICAL + "CacheTable", "CACHE TABLE t", note="SHARED on what it reads"),
    _rule(
        _LOGICAL + "CacheTableAsSelect", "CACHE TABLE c AS SELECT", note="SHARED on what it reads"
    ),
    _rule(_LOGICAL + "UncacheTable", "UNCACHE TABLE t", note="SHARED on what it reads"),
    _rule(
        _COMMAND + "RepairTableCommand",
        "MSCK REPAIR TABLE t / ALTER TABLE t RECOVER PARTITIONS",
        Target("tableName", X),
    ),
    _rule(_LOGICAL + "CreateNamespace", "CREATE DATABASE db", Target("name", X)),
    _rule(_LOGICAL + "DropNamespace", "DROP DATABASE db", Target("namespace", X)),
    _rule(
        _LOGICAL + "SetNamespaceProperties",
        "ALTER DATABASE db SET DBPROPERTIES",
        Target("namespace", X),
    ),
    _rule(
        _LOGICAL + "SetNamespaceLocation", "ALTER DATABASE db SET LOCATION", Target("namespace", X)
    ),
    _rule(_COMMAND + "CreateDatabaseCommand", "CREATE DATABASE db (v1)", Target("databaseName", X)),
    _rule(_COMMAND + "DropDatabaseCommand", "DROP DATABASE db (v1)", Target("databaseName", X)),
    _rule(
        _COMMAND + "AlterDatabasePropertiesCommand",
        "ALTER DATABASE db SET DBPROPERTIES (v1)",
        Target("databaseName", X),
    ),
    _rule(
        _COMMAND + "AlterDatabaseSetLocationCommand",
        "ALTER DATABASE db SET LOCATION (v1)",
        Target("databaseName", X),
    ),
    # metadata reads
    _rule(_COMMAND + "DescribeTableCommand", "DESCRIBE TABLE t", Target("table", S)),
    _rule(_COMMAND + "DescribeColumnCommand", "DESCRIBE TABLE t col", Target("table", S)),
    _rule(_COMMAND + "ShowPartitionsCommand", "SHOW PARTITIONS t", Target("tableName", S)),
    _rule(
        _COMMAND + "ShowPartitionsJsonCommand",
        "SHOW PARTITIONS t ... AS JSON (Spark 4.3)",
        Target("child", S),
    ),
    _rule(_COMMAND + "ShowCreateTableCommand", "SHOW CREATE TABLE t", Target("table", S)),
    _rule(_COMMAND + "ShowColumnsCommand", "SHOW COLUMNS IN t", Target("tableName", S)),
    _rule(_COMMAND + "ShowTablePropertiesCommand", "SHOW TBLPROPERTIES t", Target("table", S)),
    _rule(_LOGICAL + "ShowTableProperties", "SHOW TBLPROPERTIES t (v2)", Target("table", S)),
    _rule(_LOGICAL + "ShowCreateTable", "SHOW CREATE TABLE t (v2)", Target("child", S)),
    _rule(
        _COMMAND + "ShowCreateTableAsSerdeCommand",
        "SHOW CREATE TABLE t AS SERDE",
        Target("table", S),
    ),
    _rule(_LOGICAL + "DescribeNamespace", "DESCRIBE DATABASE db", Target("namespace", S)),
    _rule(
        _COMMAND + "ShowTablesCommand",
        "SHOW TABLE EXTENDED [IN db] LIKE ...",
        Target("databaseName", S),
    ),
    _rule(_COMMAND + "ShowViewsCommand", "SHOW VIEWS [IN db]", Target("databaseName", S)),
    _rule(
        _COMMAND + "AlterViewSchemaBindingCommand",
        "ALTER VIEW v WITH SCHEMA BINDING|...",
        Target("name", X),
    ),
    # v2 forms of the metadata reads above (tables of a v2 session catalog: Delta's, Iceberg's)
    _rule(_LOGICAL + "DescribeRelation", "DESCRIBE TABLE t (v2)", Target("relation", S)),
    _rule(_LOGICAL + "DescribeColumn", "DESCRIBE TABLE t col (v2)", Target("relation", S)),
    _rule(
        _LOGICAL + "DescribeTablePartition",
        "DESCRIBE TABLE t PARTITION (...) (v2)",
        Target("table", S, partitions="partitionSpec", partition_mode=S),
    ),
    _rule(_LOGICAL + "ShowColumns", "SHOW COLUMNS IN t (v2)", Target("child", S)),
    _rule(_LOGICAL + "ShowPartitions", "SHOW PARTITIONS t (v2)", Target("table", S)),
    _rule(
        _LOGICAL + "ShowTablePartition",
        "SHOW TABLE EXTENDED ... PARTITION (...) (v2)",
        Target("table", S, partitions="partitionSpec", partition_mode=S),
    ),
    _rule(
        _LOGICAL + "ShowTablesExtended",
        "SHOW TABLE EXTENDED [IN db] LIKE ... (v2)",
        Target("namespace", S),
    ),
    _rule(
        _LOGICAL + "ShowTableExtended",
        "SHOW TABLE EXTENDED [IN db] LIKE ... (v2, Spark 3.5)",
        Target("namespace", S),
    ),
    _rule(
        _COMMAND + "DescribeRelationJsonCommand",
        "DESCRIBE EXTENDED t [PARTITION (...)] AS JSON",
        Target("child", S),
    ),
    _rule(
        _COMMAND + "DescribeDatabaseCommand",
        "DESCRIBE DATABASE db (spark.sql.legacy.useV1Command)",
        Target("databaseName", S),
    ),
    _rule(
        _LOGICAL + "CreateTableLike",
        "CREATE TABLE t LIKE s (v2)",
        Target("name", X),
        Target("source", S),
    ),
    # v2 forms of the partition DDL (tables of a v2 session catalog with partition management):
    # the locks of their v1 rows, the partitions read from the resolved partition specs
    _rule(
        _LOGICAL + "AddPartitions",
        "ALTER TABLE t ADD PARTITION (...) (v2)",
        Target("table", S, partitions="parts"),
    ),
    _rule(
        _LOGICAL + "DropPartitions",
        "ALTER TABLE t DROP PARTITION (...) (v2)",
        Target("table", S, partitions="parts"),
    ),
    _rule(
        _LOGICAL + "RenamePartitions",
        "ALTER TABLE t PARTITION (...) RENAME TO PARTITION (v2)",
        Target("table", S, partitions="from"),
        Target("table", S, partitions="to"),
    ),
    _rule(
        _LOGICAL + "TruncatePartition",
        "TRUNCATE TABLE t PARTITION (...) (v2)",
        Target("table", X, partitions="partitionSpec"),
    ),
    _rule(
        _LOGICAL + "SetTableLocation",
        "ALTER TABLE t [PARTITION (...)] SET LOCATION (v2)",
        Target("table", X, partitions="partitionSpec"),
    ),
    _rule(
        _LOGICAL + "SetTableSerDeProperties",
        "ALTER TABLE t [PARTITION (...)] SET SERDE|SERDEPROPERTIES (v2)",
        Target("child", S, partitions="partitionSpec", partition_mode=S),
    ),
    # CALL (no Command: Spark runs a procedure while analysing it; the shim wraps it in a command
    # that runs it once the locks are held): conservatively EXCLUSIVE on what its arguments name
    _rule(
        _LOGICAL + "Call",
        "CALL cat.ns.proc(...) (Spark 4.0+)",
        Target("args", X),
        note="each existing table a constant string argument names, before the procedure runs",
    ),
    # writes: the JVM reports their target under "writes", locked by the write rule of ``policy``
    _rule(
        _SOURCES + "InsertIntoHadoopFsRelationCommand",
        "INSERT INTO|OVERWRITE t (file tables), df.write.parquet(p)",
        note=_WRITE_RULE,
    ),
    _rule(_SOURCES + "InsertIntoDataSourceCommand", "INSERT INTO t (v1 sources)", note=_WRITE_RULE),
    _rule(
        _COMMAND + "InsertIntoDataSourceDirCommand",
        "INSERT OVERWRITE DIRECTORY p USING ...",
        note=_WRITE_RULE,
    ),
    _rule(
        _SOURCES + "SaveIntoDataSourceCommand",
        "df.write.format(...).save(p) (non-file sources: JDBC, Delta/Hudi paths)",
        Target("options", X),
        note="its `path` option and each of its `paths`: the table owning it, else the path; "
        "a JDBC `url` + `dbtable`: that table as a connector object",
    ),
    _rule(_HIVE + "InsertIntoHiveTable", "INSERT INTO|OVERWRITE t (Hive tables)", note=_WRITE_RULE),
    _rule(
        _HIVE + "InsertIntoHiveDirCommand",
        "INSERT OVERWRITE DIRECTORY p STORED AS ...",
        note=_WRITE_RULE,
    ),
    _rule(_LOGICAL + "AppendData", "INSERT INTO t (v2)", Target("table", X), note=_V2_WRITE_RULE),
    _rule(
        _LOGICAL + "OverwriteByExpression",
        "INSERT OVERWRITE t (v2)",
        Target("table", X),
        note=_V2_WRITE_RULE,
    ),
    _rule(
        _LOGICAL + "OverwritePartitionsDynamic",
        "INSERT OVERWRITE t (v2, dynamic partitions)",
        Target("table", X),
        note=_V2_WRITE_RULE,
    ),
    # Delta Lake (delta-spark), by their analysed command classes; field names as in
    # delta-io/delta (spark/src/main/scala/org/apache/spark/sql/delta/commands, io/delta/tables/
    # execution). A catalog table and the path of its Delta log name the same table; a path-based
    # table (delta.`/p`) is locked by path (the table owning it, else a path object).
    _rule(
        _DELTA + "DeleteCommand",
        "DELETE FROM t (Delta)",
        Target("catalogTable", X),
        Target("target", X),
        Target("deltaLog", X),
    ),
    _rule(
        _DELTA + "UpdateCommand",
        "UPDATE t (Delta)",
        Target("catalogTable", X),
        Target("target", X),
        Target("tahoeFileIndex", X),
    ),
    _rule(
        _DELTA + "MergeIntoCommand",
        "MERGE INTO t USING s (Delta)",
        Target("catalogTable", X),
        Target("target", X),
        Target("targetFileIndex", X),
        note="SHARED on the source",
    ),
    _rule(_DELTA + "OptimizeTableCommand", "OPTIMIZE t (Delta)", Target("child", X)),
    _rule(
        _DELTA + "RestoreTableCommand",
        "RESTORE TABLE t TO VERSION AS OF (Delta)",
        Target("sourceTable", X),
    ),
    _rule(
        _DELTA + "WriteIntoDelta",
        "df.write.format('delta') (Delta)",
        Target("catalogTableOpt", X),
        Target("deltaLog", X),
    ),
    _rule(
        _STREAMING + "WriteToMicroBatchDataSourceV1",
        "one micro-batch of writeStream into a table or path (file sinks; no Command)",
        Target("catalogTable", X),
        Target("sink", X),
        note="held from before the batch's write until its sink committed; the `sink` is a "
        "file sink's path (its table, else the path); a streaming read is SHARED per batch",
    ),
    _rule(_LOGICAL + "DeleteFromTable", "DELETE FROM t (v2)", Target("table", X)),
    _rule(_LOGICAL + "UpdateTable", "UPDATE t (v2)", Target("table", X)),
    _rule(
        _LOGICAL + "MergeIntoTable",
        "MERGE INTO t USING s (v2)",
        Target("targetTable", X),
        note="SHARED on the source",
    ),
)

RULES += tuple(_rule(c, s, *(Target(*t) for t in ts), note=n) for c, s, ts, n in DELTA_ROWS)

BY_CLASS: dict[str, CommandRule] = {r.class_name: r for r in RULES}
"""The rows by full class name: what the policy looks up (the facts' ``commandClass``)."""

NO_LOCK_CLASSES = frozenset(NO_LOCK)
"""Commands that touch no table or database of their own: never "unrecognised"."""
