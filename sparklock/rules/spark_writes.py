"""Writes and row-level changes: rows of the command table (:mod:`.commands`).

INSERT in its v1 and v2 forms, the DataFrame writers, Delta Lake's DML commands (by their
analysed command classes), a streaming micro-batch's sink, and v2 DELETE / UPDATE / MERGE. The
target of an insert is reported by the JVM under "writes" and locked by the write rule of
``policy``; a row here adds what its command's own fields name. A row's shape:
:mod:`.command_rule`.
"""

from __future__ import annotations

from .command_rule import (
    COMMAND,
    DELTA,
    HIVE,
    LOGICAL,
    SOURCES,
    STREAMING,
    V2_WRITE_RULE,
    WRITE_RULE,
    CommandRule,
    Target,
    X,
    rule,
)
from .delta import PINNED, PINS

RULES: tuple[CommandRule, ...] = (
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
    # v2 DELETE / UPDATE / MERGE into a table with row-level operations (Iceberg), as Spark's
    # analyser rewrites them: copy-on-write and merge-on-read
    *(
        rule(
            LOGICAL + cls,
            f"DELETE FROM t, UPDATE t, MERGE INTO t (v2, {how})",
            Target("table", X, pinned_by=PINNED),
            Target("originalTable", X, pinned_by=PINNED),
            note="SHARED on a MERGE's source; EXCLUSIVE on the identity partitions its condition "
            "pins (SHARED on the table), else on the table: a column an UPDATE or a MERGE's "
            "rows change, or any column with WHEN NOT MATCHED BY SOURCE, pins nothing",
        )
        for cls, how in (("ReplaceData", "copy-on-write"), ("WriteDelta", "merge-on-read"))
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
