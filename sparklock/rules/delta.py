"""Delta Lake's commands: which of their fields are locked, in which mode (data for ``commands``).

Delta (delta-spark) brings its own command classes; the rows here are registered into the command
table by ``commands`` (``RULES``, ``BY_CLASS``), so the policy looks them up like Spark's. Field
names are those the JVM reports: the commands' case-class fields, as read from Delta's jars (a
``DeltaTableV2`` or ``ResolvedTable`` is its catalog table, else its path; a ``DeltaLog`` its data
path; a path-based table ``delta.`/p``` is locked by path: the table owning it, else a path
object). ``tests/test_delta.py`` enumerates every concrete command class of the Delta jar of each
tested Delta release and fails on one that is neither a row here or in ``commands`` nor in
:data:`PLANS`.

Why these modes: Delta readers read a snapshot and never see a commit half done, but a reader's
snapshot keeps pointing at data files that ``VACUUM`` deletes, that ``RESTORE``, ``REPLACE``,
``TRUNCATE`` and a table ``DROP`` make unreachable, and that ``OPTIMIZE``/``REORG`` rewrite; and
concurrent writers to the same files fail at commit (``ConcurrentAppendException`` and its kin)
after doing all their work. So every command that commits to a table takes EXCLUSIVE on it (or on
the partitions its statement pins, see ``policy``), waiting for the readers and writers it would
break; what only reads a snapshot or the log takes SHARED.
"""

from __future__ import annotations

from ..locks.model import LockMode

S, X = LockMode.SHARED, LockMode.EXCLUSIVE

_C = "org.apache.spark.sql.delta.commands."
_L = "org.apache.spark.sql.catalyst.plans.logical."  # Delta adds some to Spark's package

Row = tuple[str, str, tuple[tuple[str, LockMode], ...], str]
"""(full class name, how users write it, (field, mode) targets, note)."""

PINNED = "writtenRows"
"""The constraints field the JVM reports for Delta's writes (the rows they write)."""
PINS = "EXCLUSIVE on the partitions its condition pins (SHARED on the table), else on the table"

_COMMITS = "EXCLUSIVE: a commit that rewrites or removes files readers of a snapshot may use"
_ALTER = "EXCLUSIVE: a metadata commit (fails concurrent writers with MetadataChangedException)"

ROWS: tuple[Row, ...] = (
    (
        "io.delta.tables.execution.VacuumTableCommand",
        "VACUUM t [RETAIN n HOURS] [DRY RUN] (Delta), DeltaTable.vacuum()",
        (("child", X),),
        "EXCLUSIVE: it deletes files that running readers and time travel still read",
    ),
    (
        _C + "CloneTableCommand",
        "CREATE [OR REPLACE] TABLE t SHALLOW CLONE s (Delta)",
        (("targetIdent", X), ("targetPath", X)),
        "its source (a table or path, in its `sourceTable`) is read: SHARED",
    ),
    (
        _C + "ConvertToDeltaCommand",
        "CONVERT TO DELTA t | parquet.`/p` (Delta)",
        (("tableIdentifier", X), ("deltaPath", X)),
        "EXCLUSIVE on the table, or on the path (the table owning it, else the path)",
    ),
    (
        _C + "CreateDeltaTableCommand",
        "CREATE|REPLACE TABLE t USING delta [AS SELECT], saveAsTable (Delta)",
        (("table", X),),
        "REPLACE makes the old files unreachable: EXCLUSIVE as CREATE",
    ),
    (
        _C + "DeltaGenerateCommand",
        "GENERATE symlink_format_manifest FOR TABLE t (Delta)",
        (("child", S),),
        "SHARED: it writes manifest files of one snapshot, no Delta commit",
    ),
    (_C + "DeltaReorgTableCommand", "REORG TABLE t APPLY (PURGE) (Delta)", (("target", X),), ""),
    (_C + "DeltaReorgTable", "REORG TABLE t (Delta, unresolved form)", (("target", X),), ""),
    (_C + "DescribeDeltaDetailCommand", "DESCRIBE DETAIL t (Delta)", (("child", S),), ""),
    (_C + "DescribeDeltaHistoryCommand", "DESCRIBE HISTORY t (Delta)", (("table", S),), ""),
    (_C + "ShowDeltaPartitionsCommand", "SHOW PARTITIONS t (Delta 4.x)", (("child", S),), ""),
    (_C + "ShowDeltaTableColumnsCommand", "SHOW COLUMNS IN t (Delta)", (("child", S),), ""),
    (_C + "TruncateDeltaTableCommand", "TRUNCATE TABLE t (Delta 4.x)", (("child", X),), ""),
    (
        "org.apache.spark.sql.delta.DeltaDynamicPartitionOverwriteCommand",
        "INSERT OVERWRITE t (Delta, partitionOverwriteMode=dynamic)",
        (("table", X), ("deltaTable", X)),
        "",
    ),
    (
        _C + "DeltaInsertReplaceOnOrUsingCommand",
        "INSERT INTO t REPLACE ON|USING (...) (Delta 4.x)",
        (("deltaTable", X), ("deltaLog", X)),
        "",
    ),
    (
        _C + "backfill.RowTrackingBackfillCommand",
        "enabling row tracking (Delta, run by ALTER TABLE)",
        (("catalogTableOpt", X), ("deltaLog", X)),
        "",
    ),
    (
        _C + "backfill.RowTrackingUnBackfillCommand",
        "disabling row tracking (Delta 4.x, run by ALTER TABLE)",
        (("catalogTableOpt", X), ("deltaLog", X)),
        "",
    ),
    *(
        (_C + cls, statement + " (Delta)", (("table", X),), _ALTER)
        for cls, statement in (
            ("AlterTableAddColumnsDeltaCommand", "ALTER TABLE t ADD COLUMNS"),
            ("AlterTableAddConstraintDeltaCommand", "ALTER TABLE t ADD CONSTRAINT"),
            ("AlterTableChangeColumnDeltaCommand", "ALTER TABLE t ALTER|CHANGE COLUMN"),
            ("AlterTableClusterByDeltaCommand", "ALTER TABLE t CLUSTER BY"),
            ("AlterTableDropColumnsDeltaCommand", "ALTER TABLE t DROP COLUMNS"),
            ("AlterTableDropConstraintDeltaCommand", "ALTER TABLE t DROP CONSTRAINT"),
            ("AlterTableDropFeatureDeltaCommand", "ALTER TABLE t DROP FEATURE"),
            ("AlterTableReplaceColumnsDeltaCommand", "ALTER TABLE t REPLACE COLUMNS"),
            ("AlterTableSetLocationDeltaCommand", "ALTER TABLE t SET LOCATION"),
            ("AlterTableSetPropertiesDeltaCommand", "ALTER TABLE t SET TBLPROPERTIES"),
            ("AlterTableUnsetPropertiesDeltaCommand", "ALTER TABLE t UNSET TBLPROPERTIES"),
        )
    ),
    *(
        (cls, statement + " (Delta, unresolved form)", (("table", X),), _ALTER)
        for cls, statement in (
            (_L + "AlterColumnSyncIdentity", "ALTER TABLE t ALTER COLUMN c SYNC IDENTITY"),
            (_L + "AlterTableAddConstraint", "ALTER TABLE t ADD CONSTRAINT"),
            (_L + "AlterTableDropConstraint", "ALTER TABLE t DROP CONSTRAINT"),
            (_L + "AlterTableDropFeature", "ALTER TABLE t DROP FEATURE"),
            (
                "org.apache.spark.sql.delta.skipping.clustering.temp.AlterTableClusterBy",
                "ALTER TABLE t CLUSTER BY",
            ),
        )
    ),
    (
        _L + "DeltaMergeInto",
        "MERGE INTO t USING s (Delta, unresolved form)",
        (("target", X),),
        "SHARED on the source",
    ),
)
"""Delta's command classes beyond the rows kept in ``commands`` (DELETE, UPDATE, MERGE,
OPTIMIZE, RESTORE, WriteIntoDelta)."""

_INTO = "resolved by Delta's analysis into {} before any lock is taken: never a statement's root"
_READ = "a read of a Delta table (locked SHARED by the read rule, as the relation it becomes)"

PLANS: dict[str, str] = {
    _L + "CloneTableStatement": _INTO.format("CloneTableCommand"),
    _L + "DeltaDelete": _INTO.format("DeleteCommand"),
    _L + "DeltaUpdateTable": _INTO.format("UpdateCommand"),
    _L + "RestoreTableStatement": _INTO.format("RestoreTableCommand"),
    "org.apache.spark.sql.catalyst.TimeTravel": "VERSION|TIMESTAMP AS OF: " + _READ,
    "org.apache.spark.sql.delta.CDCNameBased": "table_changes('t', ...): " + _READ,
    "org.apache.spark.sql.delta.CDCPathBased": "table_changes_by_path('/p', ...): " + _READ,
    "org.apache.spark.sql.delta.TableChanges": "Change Data Feed read: " + _READ,
    "org.apache.spark.sql.delta.ResolvedPathBasedNonDeltaTable": "CONVERT TO DELTA's source: "
    + _INTO.format("ConvertToDeltaCommand"),
    "org.apache.spark.sql.delta.UnresolvedPathBasedDeltaTable": _INTO.format("a path table"),
    "org.apache.spark.sql.delta.UnresolvedPathBasedDeltaTableRelation": _INTO.format(
        "a path table's relation"
    ),
    "org.apache.spark.sql.delta.UnresolvedPathBasedTable": _INTO.format("a path table"),
    _C + "DescribeDeltaHistory": _INTO.format("DescribeDeltaHistoryCommand"),
    "org.apache.spark.sql.delta.constraints.DeltaInvariantChecker": "a CHECK/NOT NULL check "
    "inside a Delta write's plan: part of the write",
    "org.apache.spark.sql.delta.constraints.ExpressionLogicalPlanWrapper": "an expression "
    "carrier inside Delta's analysis: names no table",
    "org.apache.spark.sql.delta.skipping.clustering.temp.ClusterByPlan": "CLUSTER BY clause "
    "carrier of CREATE TABLE: names no table of its own",
    "org.apache.spark.sql.delta.util.AnalysisHelper$FakeLogicalPlan": "a placeholder Delta "
    "analyses expressions against: names no table",
}
"""Delta's logical plans that are no command: what each becomes (none is ever locked as one)."""
