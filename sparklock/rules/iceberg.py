"""Apache Iceberg's commands and procedures: which of their fields are locked, in which mode.

Iceberg's runtime jar brings two kinds of roots of its own (the rows here are registered into the
command table by ``commands``, so the policy looks them up like Spark's):

* its SQL extensions' DDL, logical plans in Spark's package (``ALTER TABLE t ADD PARTITION FIELD``,
  ``WRITE ORDERED BY``, branches, tags, identifier fields), each naming its table in the field
  ``table`` (the name parts as written);
* its stored procedures (``CALL ice.system.expire_snapshots(table => 'db.t')``). For a ``CALL``
  the JVM reports the procedure's own class as the command class and each constant string
  argument as a field named by the procedure's parameter (named or positional alike), the name
  resolved in the procedure's catalog (a first part naming a catalog wins), so a row reads like
  the procedure's signature.

Iceberg's row-level and append writes (INSERT, INSERT OVERWRITE, DELETE, UPDATE, MERGE,
``writeTo``) run as Spark's own v2 plans (``AppendData``, ``OverwriteByExpression``,
``OverwritePartitionsDynamic``, ``ReplaceData``, ``WriteDelta``, ``MergeIntoTable``...): their
rows are Spark's. ``tests/test_iceberg.py`` lists the classes of the runtime jar of each tested
Iceberg release and fails on one that has no row here nor an entry in :data:`PLANS`.

Why these modes: an Iceberg reader reads one snapshot and never sees a commit half done, but a
snapshot's files are deleted by ``expire_snapshots`` and ``remove_orphan_files``, replaced by the
rewrites, and made unreachable by rollbacks and ``DROP``; and writers whose commits overlap fail
at commit (``ValidationException``, ``CommitFailedException``) after doing all their work. So
what commits data or metadata to a table takes EXCLUSIVE on it; what only reads a snapshot or
the metadata takes SHARED. A procedure that names two tables (``migrate``, ``snapshot``,
``add_files``, ``register_table``) locks its source SHARED and its target EXCLUSIVE.
"""

from __future__ import annotations

from ..locks.model import LockMode

S, X = LockMode.SHARED, LockMode.EXCLUSIVE

_L = "org.apache.spark.sql.catalyst.plans.logical."  # Iceberg adds its DDL to Spark's package
_P = "org.apache.iceberg.spark.procedures."

Row = tuple[str, str, tuple[tuple[str, LockMode], ...], str]
"""(full class name, how users write it, (field, mode) targets, note)."""

_DDL = "EXCLUSIVE: a metadata commit that concurrent writers' commits would fail on or undo"
_FILES = "EXCLUSIVE: it replaces or deletes files that readers of a snapshot still read"
_STATE = "EXCLUSIVE: it moves the table's current snapshot under running readers and writers"
_READ = "SHARED: it reads one snapshot or the metadata, and commits no data"
_STATS = (
    "SHARED: it reads one snapshot; the statistics file it commits changes no data, and Iceberg "
    "retries that metadata-only commit itself"
)


def _ddl(cls: str, statement: str) -> Row:
    return (_L + cls, statement + " (Iceberg)", (("table", X),), _DDL)


def _call(cls: str, name: str, targets: tuple[tuple[str, LockMode], ...], note: str) -> Row:
    return (_P + cls, f"CALL cat.system.{name}(table => 'db.t', ...) (Iceberg)", targets, note)


ROWS: tuple[Row, ...] = (
    _ddl("AddPartitionField", "ALTER TABLE t ADD PARTITION FIELD"),
    _ddl("DropPartitionField", "ALTER TABLE t DROP PARTITION FIELD"),
    _ddl("ReplacePartitionField", "ALTER TABLE t REPLACE PARTITION FIELD"),
    _ddl("SetWriteDistributionAndOrdering", "ALTER TABLE t WRITE [LOCALLY] ORDERED BY|DISTRIBUTED"),
    _ddl("SetIdentifierFields", "ALTER TABLE t SET IDENTIFIER FIELDS"),
    _ddl("DropIdentifierFields", "ALTER TABLE t DROP IDENTIFIER FIELDS"),
    _ddl("CreateOrReplaceBranch", "ALTER TABLE t CREATE [OR REPLACE] BRANCH"),
    _ddl("CreateOrReplaceTag", "ALTER TABLE t CREATE [OR REPLACE] TAG"),
    _ddl("DropBranch", "ALTER TABLE t DROP BRANCH"),
    _ddl("DropTag", "ALTER TABLE t DROP TAG"),
    (
        _L + "views.CreateIcebergView",
        "CREATE [OR REPLACE] VIEW v AS ... (Iceberg views, in an Iceberg catalog)",
        (("child", X),),
        "EXCLUSIVE on the view; what its query reads is SHARED",
    ),
    (_L + "views.DropIcebergView", "DROP VIEW v (Iceberg views)", (("child", X),), ""),
    (
        _L + "views.ShowIcebergViews",
        "SHOW VIEWS (Iceberg views)",
        (),
        "nothing: a catalog listing, no view's metadata read",
    ),
    _call(
        "AddFilesProcedure",
        "add_files",
        (("table", X), ("source_table", S)),
        "EXCLUSIVE on the Iceberg table it commits to, SHARED on the source table whose files it "
        "adds (a `format.`/path`` source names no table)",
    ),
    _call("AncestorsOfProcedure", "ancestors_of", (("table", S),), _READ),
    _call("CherrypickSnapshotProcedure", "cherrypick_snapshot", (("table", X),), _STATE),
    _call("ComputePartitionStatsProcedure", "compute_partition_stats", (("table", S),), _STATS),
    _call("ComputeTableStatsProcedure", "compute_table_stats", (("table", S),), _STATS),
    _call(
        "CreateChangelogViewProcedure",
        "create_changelog_view",
        (("table", S),),
        "SHARED: it defines a temporary view over the table's changes (the view's reads lock "
        "the table SHARED again when they run)",
    ),
    _call("ExpireSnapshotsProcedure", "expire_snapshots", (("table", X),), _FILES),
    _call("FastForwardBranchProcedure", "fast_forward", (("table", X),), _STATE),
    _call(
        "MigrateTableProcedure",
        "migrate",
        (("table", X),),
        "EXCLUSIVE on the table it replaces in place with an Iceberg table (the source and the "
        "target are one name; its backup keeps the old files under another name)",
    ),
    _call("PublishChangesProcedure", "publish_changes", (("table", X),), _STATE),
    _call(
        "RegisterTableProcedure",
        "register_table",
        (("table", X),),
        "EXCLUSIVE on the table it creates from a metadata file (the file is no table)",
    ),
    _call("RemoveOrphanFilesProcedure", "remove_orphan_files", (("table", X),), _FILES),
    _call("RewriteDataFilesProcedure", "rewrite_data_files", (("table", X),), _FILES),
    _call("RewriteManifestsProcedure", "rewrite_manifests", (("table", X),), _FILES),
    _call(
        "RewritePositionDeleteFilesProcedure",
        "rewrite_position_delete_files",
        (("table", X),),
        _FILES,
    ),
    _call(
        "RewriteTablePathProcedure",
        "rewrite_table_path",
        (("table", S),),
        "SHARED: it writes a copy of the metadata under a staging location and changes nothing "
        "of the table",
    ),
    _call("RollbackToSnapshotProcedure", "rollback_to_snapshot", (("table", X),), _STATE),
    _call("RollbackToTimestampProcedure", "rollback_to_timestamp", (("table", X),), _STATE),
    _call("SetCurrentSnapshotProcedure", "set_current_snapshot", (("table", X),), _STATE),
    _call(
        "SnapshotTableProcedure",
        "snapshot",
        (("source_table", S), ("table", X)),
        "SHARED on the source table, EXCLUSIVE on the Iceberg table it creates over the "
        "source's files",
    ),
)
"""Iceberg's DDL plans and procedures (Iceberg 1.10 / 1.11)."""

PLANS: dict[str, str] = {
    _L + "OrderAwareCoalesce": "a coalesce Iceberg's rewrite plans insert: names no table",
    _L + "BranchOptions": "the options of CREATE BRANCH: a value, no plan of its own",
    _L + "TagOptions": "the options of CREATE TAG: a value, no plan of its own",
    _L + "views.ResolvedV2View": "the view a DROP VIEW names, resolved: a field of that "
    "command, never a root",
    _L + "CallStatement": "Iceberg's parsed CALL on Spark 3.5, resolved into Call (a row of "
    "Spark's table, the procedure's row once bound) before any lock is taken",
}
"""Iceberg's classes among Spark's logical plans that are no root command (never locked as one)."""
