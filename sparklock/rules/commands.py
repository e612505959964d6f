"""The command table: Spark command class → which of its fields are locked, in which mode.

One row per analysed command class of Spark 4.x (v1 commands, v2 logical plans, Hive, Delta), read
as data, in the spirit of Kyuubi's authz table, keyed by full class name: the JVM reports the root
command's table-valued fields by name, this table says what each field means (a row's shape:
:mod:`.command_rule`). What the plan *reads* (queries inside CTAS, views, MERGE sources) is
locked SHARED by the read rules in ``policy``; the rows here add the command's own targets.
Every other command class of Spark is on the no-lock or the fail-safe list of
``command_classes`` (a test enumerates Spark's jars). The docs' statement table and lists are
generated from here by ``command_docs`` (``python3 -m sparklock.docs_pages --write``).
"""

from __future__ import annotations

from .command_classes import NO_LOCK
from .command_rule import (
    COMMAND,
    DELTA,
    HIVE,
    LOGICAL,
    SOURCES,
    STREAMING,
    TEMP_VIEW,
    V2_WRITE_RULE,
    WRITE_RULE,
    CommandRule,
    S,
    Target,
    X,
    rule,
)
from .delta import PINNED, PINS
from .delta import ROWS as DELTA_ROWS
from .iceberg import ROWS as ICEBERG_ROWS

# Spark SQL (session catalog; class names as analysed by Spark 4.x)
RULES: tuple[CommandRule, ...] = (
    rule(LOGICAL + "DropTable", "DROP TABLE t", Target("child", X)),
    rule(COMMAND + "DropTableCommand", "DROP TABLE / DROP VIEW t", Target("tableName", X)),
    rule(
        COMMAND + "AlterTableRenameCommand",
        "ALTER TABLE|VIEW t RENAME TO t2",
        Target("oldName", X),
        Target("newName", X, database_from="oldName"),
    ),
    rule(
        LOGICAL + "RenameTable",
        "ALTER TABLE|VIEW t RENAME TO t2 (v2)",
        Target("child", X),
        Target("newName", X, database_from="child"),
    ),
    rule(
        COMMAND + "TruncateTableCommand",
        "TRUNCATE TABLE t [PARTITION (...)]",
        Target("tableName", X, partitions="partitionSpec"),
    ),
    rule(COMMAND + "AlterTableAddColumnsCommand", "ALTER TABLE t ADD COLUMNS", Target("table", X)),
    rule(
        COMMAND + "AlterTableChangeColumnCommand",
        "ALTER TABLE t CHANGE COLUMN",
        Target("tableName", X),
    ),
    rule(
        COMMAND + "AlterTableChangeColumnCommentsCommand",
        "ALTER TABLE t ALTER COLUMN ... COMMENT (Spark 4.3)",
        Target("tableName", X),
    ),
    rule(
        LOGICAL + "ReplaceColumns", "ALTER TABLE t REPLACE COLUMNS (v2 tables)", Target("table", X)
    ),
    rule(
        COMMAND + "AlterTableSetPropertiesCommand",
        "ALTER TABLE t SET TBLPROPERTIES",
        Target("tableName", X),
    ),
    rule(
        COMMAND + "AlterTableUnsetPropertiesCommand",
        "ALTER TABLE t UNSET TBLPROPERTIES",
        Target("tableName", X),
    ),
    rule(
        COMMAND + "AlterTableSetLocationCommand",
        "ALTER TABLE t [PARTITION (...)] SET LOCATION",
        Target("tableName", X, partitions="partitionSpec"),
    ),
    rule(
        COMMAND + "AlterTableAddPartitionCommand",
        "ALTER TABLE t ADD PARTITION (...)",
        Target("tableName", S, partitions="partitionSpecsAndLocs"),
    ),
    rule(
        COMMAND + "AlterTableDropPartitionCommand",
        "ALTER TABLE t DROP PARTITION (...)",
        Target("tableName", S, partitions="specs"),
    ),
    rule(
        COMMAND + "AlterTableRenamePartitionCommand",
        "ALTER TABLE t PARTITION (...) RENAME TO PARTITION",
        Target("tableName", S, partitions="oldPartition"),
        Target("tableName", S, partitions="newPartition"),
    ),
    rule(
        COMMAND + "AlterTableSerDePropertiesCommand",
        "ALTER TABLE t SET SERDE|SERDEPROPERTIES",
        Target("tableName", S, partitions="partSpec", partition_mode=S),
    ),
    rule(COMMAND + "CreateDataSourceTableCommand", "CREATE TABLE t USING ...", Target("table", X)),
    rule(COMMAND + "CreateTableCommand", "CREATE TABLE t ... STORED AS (Hive)", Target("table", X)),
    rule(
        COMMAND + "CreateDataSourceTableAsSelectCommand",
        "CREATE TABLE t USING ... AS SELECT",
        Target("table", X),
    ),
    rule(
        HIVE + "CreateHiveTableAsSelectCommand",
        "CREATE TABLE t STORED AS ... AS SELECT",
        Target("tableDesc", X),
    ),
    rule(
        HIVE + "OptimizedCreateHiveTableAsSelectCommand",
        "CREATE TABLE t STORED AS ... AS SELECT (Spark 3.5)",
        Target("tableDesc", X),
    ),
    rule(
        COMMAND + "SaveAsV1TableCommand",
        "df.write.saveAsTable('t') (new table or overwrite)",
        Target("tableDesc", X),
    ),
    rule(
        COMMAND + "CreateTableLikeCommand",
        "CREATE TABLE t LIKE s",
        Target("targetTable", X),
        Target("sourceTable", S),
    ),
    rule(
        COMMAND + "CreateViewCommand",
        "CREATE [OR REPLACE] VIEW v AS ...",
        Target("name", X),
        note="temporary views lock only what they read",
        no_lock_when=TEMP_VIEW,
    ),
    rule(
        SOURCES + "CreateTempViewUsing",
        "CREATE TEMPORARY VIEW v USING ... OPTIONS (path ...)",
        Target("options", S),
        note="its `path` option and each of its `paths` is what it reads: the table owning it, "
        "else the path",
    ),
    rule(COMMAND + "AlterViewAsCommand", "ALTER VIEW v AS ...", Target("name", X)),
    rule(
        COMMAND + "LoadDataCommand",
        "LOAD DATA ... INTO TABLE t [PARTITION (...)]",
        Target("table", X, partitions="partition"),
    ),
    rule(
        COMMAND + "AnalyzeTableCommand",
        "ANALYZE TABLE t COMPUTE STATISTICS",
        Target("tableIdent", S),
    ),
    rule(
        COMMAND + "AnalyzePartitionCommand",
        "ANALYZE TABLE t PARTITION (...) COMPUTE STATISTICS",
        Target("tableIdent", S, partitions="partitionSpec", partition_mode=S),
    ),
    rule(
        COMMAND + "AnalyzeColumnCommand",
        "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS",
        Target("tableIdent", S),
    ),
    rule(COMMAND + "AnalyzeTablesCommand", "ANALYZE TABLES IN db", Target("databaseName", S)),
    rule(COMMAND + "RefreshTableCommand", "REFRESH TABLE t", Target("tableIdent", S)),
    rule(LOGICAL + "RefreshTable", "REFRESH TABLE t (v2)", Target("child", S)),
    rule(LOGICAL + "CacheTable", "CACHE TABLE t", note="SHARED on what it reads"),
    rule(LOGICAL + "CacheTableAsSelect", "CACHE TABLE c AS SELECT", note="SHARED on what it reads"),
    rule(LOGICAL + "UncacheTable", "UNCACHE TABLE t", note="SHARED on what it reads"),
    rule(
        COMMAND + "RepairTableCommand",
        "MSCK REPAIR TABLE t / ALTER TABLE t RECOVER PARTITIONS",
        Target("tableName", X),
    ),
    rule(LOGICAL + "CreateNamespace", "CREATE DATABASE db", Target("name", X)),
    rule(LOGICAL + "DropNamespace", "DROP DATABASE db", Target("namespace", X)),
    rule(
        LOGICAL + "SetNamespaceProperties",
        "ALTER DATABASE db SET DBPROPERTIES",
        Target("namespace", X),
    ),
    rule(
        LOGICAL + "SetNamespaceLocation", "ALTER DATABASE db SET LOCATION", Target("namespace", X)
    ),
    rule(COMMAND + "CreateDatabaseCommand", "CREATE DATABASE db (v1)", Target("databaseName", X)),
    rule(COMMAND + "DropDatabaseCommand", "DROP DATABASE db (v1)", Target("databaseName", X)),
    rule(
        COMMAND + "AlterDatabasePropertiesCommand",
        "ALTER DATABASE db SET DBPROPERTIES (v1)",
        Target("databaseName", X),
    ),
    rule(
        COMMAND + "AlterDatabaseSetLocationCommand",
        "ALTER DATABASE db SET LOCATION (v1)",
        Target("databaseName", X),
    ),
    # metadata reads
    rule(COMMAND + "DescribeTableCommand", "DESCRIBE TABLE t", Target("table", S)),
    rule(COMMAND + "DescribeColumnCommand", "DESCRIBE TABLE t col", Target("table", S)),
    rule(COMMAND + "ShowPartitionsCommand", "SHOW PARTITIONS t", Target("tableName", S)),
    rule(
        COMMAND + "ShowPartitionsJsonCommand",
        "SHOW PARTITIONS t ... AS JSON (Spark 4.3)",
        Target("child", S),
    ),
    rule(COMMAND + "ShowCreateTableCommand", "SHOW CREATE TABLE t", Target("table", S)),
    rule(COMMAND + "ShowColumnsCommand", "SHOW COLUMNS IN t", Target("tableName", S)),
    rule(COMMAND + "ShowTablePropertiesCommand", "SHOW TBLPROPERTIES t", Target("table", S)),
    rule(LOGICAL + "ShowTableProperties", "SHOW TBLPROPERTIES t (v2)", Target("table", S)),
    rule(LOGICAL + "ShowCreateTable", "SHOW CREATE TABLE t (v2)", Target("child", S)),
    rule(
        COMMAND + "ShowCreateTableAsSerdeCommand",
        "SHOW CREATE TABLE t AS SERDE",
        Target("table", S),
    ),
    rule(LOGICAL + "DescribeNamespace", "DESCRIBE DATABASE db", Target("namespace", S)),
    rule(
        COMMAND + "ShowTablesCommand",
        "SHOW TABLE EXTENDED [IN db] LIKE ...",
        Target("databaseName", S),
    ),
    rule(COMMAND + "ShowViewsCommand", "SHOW VIEWS [IN db]", Target("databaseName", S)),
    rule(
        COMMAND + "AlterViewSchemaBindingCommand",
        "ALTER VIEW v WITH SCHEMA BINDING|...",
        Target("name", X),
    ),
    # v2 forms of the metadata reads above (tables of a v2 session catalog: Delta's, Iceberg's)
    rule(LOGICAL + "DescribeRelation", "DESCRIBE TABLE t (v2)", Target("relation", S)),
    rule(LOGICAL + "DescribeColumn", "DESCRIBE TABLE t col (v2)", Target("relation", S)),
    rule(
        LOGICAL + "DescribeTablePartition",
        "DESCRIBE TABLE t PARTITION (...) (v2)",
        Target("table", S, partitions="partitionSpec", partition_mode=S),
    ),
    rule(LOGICAL + "ShowColumns", "SHOW COLUMNS IN t (v2)", Target("child", S)),
    rule(LOGICAL + "ShowPartitions", "SHOW PARTITIONS t (v2)", Target("table", S)),
    rule(
        LOGICAL + "ShowTablePartition",
        "SHOW TABLE EXTENDED ... PARTITION (...) (v2)",
        Target("table", S, partitions="partitionSpec", partition_mode=S),
    ),
    rule(
        LOGICAL + "ShowTablesExtended",
        "SHOW TABLE EXTENDED [IN db] LIKE ... (v2)",
        Target("namespace", S),
    ),
    rule(
        LOGICAL + "ShowTableExtended",
        "SHOW TABLE EXTENDED [IN db] LIKE ... (v2, Spark 3.5)",
        Target("namespace", S),
    ),
    rule(
        COMMAND + "DescribeRelationJsonCommand",
        "DESCRIBE EXTENDED t [PARTITION (...)] AS JSON",
        Target("child", S),
    ),
    rule(
        COMMAND + "DescribeDatabaseCommand",
        "DESCRIBE DATABASE db (spark.sql.legacy.useV1Command)",
        Target("databaseName", S),
    ),
    rule(
        LOGICAL + "CreateTableLike",
        "CREATE TABLE t LIKE s (v2)",
        Target("name", X),
        Target("source", S),
    ),
    # v2 forms of the partition DDL (tables of a v2 session catalog with partition management):
    # the locks of their v1 rows, the partitions read from the resolved partition specs
    rule(
        LOGICAL + "AddPartitions",
        "ALTER TABLE t ADD PARTITION (...) (v2)",
        Target("table", S, partitions="parts"),
    ),
    rule(
        LOGICAL + "DropPartitions",
        "ALTER TABLE t DROP PARTITION (...) (v2)",
        Target("table", S, partitions="parts"),
    ),
    rule(
        LOGICAL + "RenamePartitions",
        "ALTER TABLE t PARTITION (...) RENAME TO PARTITION (v2)",
        Target("table", S, partitions="from"),
        Target("table", S, partitions="to"),
    ),
    rule(
        LOGICAL + "TruncatePartition",
        "TRUNCATE TABLE t PARTITION (...) (v2)",
        Target("table", X, partitions="partitionSpec"),
    ),
    rule(
        LOGICAL + "SetTableLocation",
        "ALTER TABLE t [PARTITION (...)] SET LOCATION (v2)",
        Target("table", X, partitions="partitionSpec"),
    ),
    rule(
        LOGICAL + "SetTableSerDeProperties",
        "ALTER TABLE t [PARTITION (...)] SET SERDE|SERDEPROPERTIES (v2)",
        Target("child", S, partitions="partitionSpec", partition_mode=S),
    ),
    # CALL (no Command: Spark runs a procedure while analysing it; the shim wraps it in a command
    # that runs it once the locks are held): conservatively EXCLUSIVE on what its arguments name
    rule(
        LOGICAL + "Call",
        "CALL cat.ns.proc(...) (Spark 4.0+)",
        Target("args", X),
        note="each existing table a constant string argument names, before the procedure runs",
    ),
    # writes: the JVM reports their target under "writes", locked by the write rule of ``policy``
    rule(
        SOURCES + "InsertIntoHadoopFsRelationCommand",
        "INSERT INTO|OVERWRITE t (file tables), df.write.parquet(p)",
        note=WRITE_RULE,
    ),
    rule(SOURCES + "InsertIntoDataSourceCommand", "INSERT INTO t (v1 sources)", note=WRITE_RULE),
    rule(
        COMMAND + "InsertIntoDataSourceDirCommand",
        "INSERT OVERWRITE DIRECTORY p USING ...",
        note=WRITE_RULE,
    ),
    rule(
        SOURCES + "SaveIntoDataSourceCommand",
        "df.write.format(...).save(p) (non-file sources: JDBC, Delta/Hudi paths)",
        Target("options", X, pinned_by=PINNED),
        note="its `path` option and each of its `paths`: the table owning it, else the path; "
        "a JDBC `url` + `dbtable`: that table as a connector object; a Delta overwrite with "
        "replaceWhere = 'p = 1' of a table's path: EXCLUSIVE on that partition",
    ),
    rule(HIVE + "InsertIntoHiveTable", "INSERT INTO|OVERWRITE t (Hive tables)", note=WRITE_RULE),
    rule(
        HIVE + "InsertIntoHiveDirCommand",
        "INSERT OVERWRITE DIRECTORY p STORED AS ...",
        note=WRITE_RULE,
    ),
    rule(LOGICAL + "AppendData", "INSERT INTO t (v2)", Target("table", X), note=V2_WRITE_RULE),
    rule(
        LOGICAL + "OverwriteByExpression",
        "INSERT OVERWRITE t (v2)",
        Target("table", X),
        note=V2_WRITE_RULE,
    ),
    rule(
        LOGICAL + "ReplaceTableAsSelect",
        "REPLACE TABLE t AS SELECT (v2), saveAsTable in overwrite mode (v2 catalogs)",
        Target("name", X, pinned_by=PINNED),
        note="a Delta saveAsTable overwrite with replaceWhere = 'p = 1' of an existing table: "
        "EXCLUSIVE on that partition, SHARED on the table",
    ),
    rule(
        LOGICAL + "OverwritePartitionsDynamic",
        "INSERT OVERWRITE t (v2, dynamic partitions)",
        Target("table", X),
        note=V2_WRITE_RULE,
    ),
    # Delta Lake (delta-spark), by their analysed command classes; field names as in
    # delta-io/delta (spark/src/main/scala/org/apache/spark/sql/delta/commands, io/delta/tables/
    # execution). A catalog table and the path of its Delta log name the same table; a path-based
    # table (delta.`/p`) is locked by path (the table owning it, else a path object).
    rule(
        DELTA + "DeleteCommand",
        "DELETE FROM t (Delta)",
        Target("catalogTable", X, pinned_by=PINNED),
        Target("target", X, pinned_by=PINNED),
        Target("deltaLog", X, pinned_by=PINNED),
        note=PINS,
    ),
    rule(
        DELTA + "UpdateCommand",
        "UPDATE t (Delta)",
        Target("catalogTable", X, pinned_by=PINNED),
        Target("target", X, pinned_by=PINNED),
        Target("tahoeFileIndex", X, pinned_by=PINNED),
        note=PINS + " (a partition column it assigns pins nothing)",
    ),
    rule(
        DELTA + "MergeIntoCommand",
        "MERGE INTO t USING s (Delta)",
        Target("catalogTable", X, pinned_by=PINNED),
        Target("target", X, pinned_by=PINNED),
        Target("targetFileIndex", X, pinned_by=PINNED),
        note="SHARED on the source; " + PINS + " on the target's columns, only without WHEN NOT "
        "MATCHED [BY SOURCE] clauses and for columns no clause assigns",
    ),
    rule(
        DELTA + "OptimizeTableCommand",
        "OPTIMIZE t [WHERE ...] [ZORDER BY ...] (Delta)",
        Target("child", X, pinned_by=PINNED),
        note="OPTIMIZE t WHERE p = 1: EXCLUSIVE on that partition, SHARED on the table",
    ),
    rule(
        DELTA + "RestoreTableCommand",
        "RESTORE TABLE t TO VERSION AS OF (Delta)",
        Target("sourceTable", X),
    ),
    rule(
        DELTA + "WriteIntoDelta",
        "df.write.format('delta') (Delta)",
        Target("catalogTableOpt", X, pinned_by=PINNED),
        Target("deltaLog", X, pinned_by=PINNED),
        note="an overwrite with replaceWhere = 'p = 1': EXCLUSIVE on that partition, SHARED on "
        "the table",
    ),
    rule(
        STREAMING + "WriteToMicroBatchDataSourceV1",
        "one micro-batch of writeStream into a table or path (file sinks; no Command)",
        Target("catalogTable", X),
        Target("sink", X),
        note="held from before the batch's write until its sink committed; the `sink` is a "
        "file sink's path (its table, else the path); a streaming read is SHARED per batch",
    ),
    rule(LOGICAL + "DeleteFromTable", "DELETE FROM t (v2)", Target("table", X)),
    rule(LOGICAL + "UpdateTable", "UPDATE t (v2)", Target("table", X)),
    rule(
        LOGICAL + "MergeIntoTable",
        "MERGE INTO t USING s (v2)",
        Target("targetTable", X),
        note="SHARED on the source",
    ),
)

RULES += tuple(
    rule(c, s, *(Target(*t) for t in ts), note=n) for c, s, ts, n in DELTA_ROWS + ICEBERG_ROWS
)

BY_CLASS: dict[str, CommandRule] = {r.class_name: r for r in RULES}
"""The rows by full class name: what the policy looks up (the facts' ``commandClass``)."""

NO_LOCK_CLASSES = frozenset(NO_LOCK)
"""Commands that touch no table or database of their own: never "unrecognised"."""
