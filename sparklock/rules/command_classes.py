"""The command classes with no row in the command table: the no-lock and fail-safe lists.

Together with the rows of ``commands.RULES`` these lists classify every concrete ``Command`` class
of the supported Spark versions, keyed by full class name (as Kyuubi's authz plugin keys its
command specs). ``tests/test_command_coverage.py`` enumerates the command classes of the installed
pyspark from its jars and fails on any class none of the three names, so a new Spark version's new
commands are found by the suite, not by users. An entry for a class absent from the installed
Spark (an older or newer version's) is not an error.

* ``NO_LOCK``: commands that lock nothing of their own, with why that is right. What they read
  (a plan-valued field, a query) is still locked SHARED by the read rule.
* ``FAIL_SAFE``: writes and DDL deliberately left to the fail-safe rule (EXCLUSIVE on every table
  and database the command names), with why that lock is acceptable, or what is still missing
  (a known gap).

The docs' lists are generated from here (``python3 -m sparklock.docs_pages --write``).
"""

from __future__ import annotations

_LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
_COMMAND = "org.apache.spark.sql.execution.command."
_SOURCES = "org.apache.spark.sql.execution.datasources."


def _in(package: str, entries: dict[str, str]) -> dict[str, str]:
    return {package + name: reason for name, reason in entries.items()}


_NO_CATALOG = "names no table or database"
_FUNCTIONS = "functions are not lock objects (Hive locks none for them either)"
_SESSION = "session state only"
_RESOURCES = "session resources (jars, files, archives): no catalog object"

NO_LOCK: dict[str, str] = {
    **_in(
        _LOGICAL,
        {
            "CloseCursor": "SQL-script cursor control: " + _NO_CATALOG,
            "CompoundBody": "a SQL script's body: each statement in it runs and locks as its own",
            "CreateFunction": _FUNCTIONS,
            "CreateUserDefinedFunction": _FUNCTIONS,
            "CreateVariable": "session variable: " + _SESSION,
            "DeclareCursor": "SQL-script cursor declaration: holds its query as text, "
            + _NO_CATALOG,
            "DescribeFunction": _FUNCTIONS,
            "DropFunction": _FUNCTIONS,
            "DropVariable": "session variable: " + _SESSION,
            "FetchCursor": "SQL-script cursor control: " + _NO_CATALOG,
            "NoopCommand": "what Spark runs for DROP/CREATE ... IF [NOT] EXISTS that has nothing "
            "to do",
            "OpenCursor": "SQL-script cursor control: "
            + _NO_CATALOG
            + " (that the query it opens is "
            "locked as a read is not verified)",
            "RefreshFunction": _FUNCTIONS,
            "SetCatalogAndNamespace": "USE: " + _SESSION,
            "SetVariable": "SET VAR: " + _SESSION + " (a query it evaluates is locked as a read)",
            "ShowFunctions": _FUNCTIONS,
            "ShowNamespaces": "SHOW DATABASES (Spark 3.5): a catalog listing, no object read",
            "ShowTables": "SHOW TABLES: a catalog listing, no table's metadata read",
            "ShowViews": "SHOW VIEWS (v2 form): a catalog listing, no view's metadata read",
        },
    ),
    **_in(
        _COMMAND,
        {
            "AddArchivesCommand": _RESOURCES,
            "AddFilesCommand": _RESOURCES,
            "AddJarsCommand": _RESOURCES,
            "ClearCacheCommand": "CLEAR CACHE: drops cached data only, never a table's",
            "CreateFunctionCommand": _FUNCTIONS,
            "CreateSQLFunctionCommand": _FUNCTIONS,
            "DescribeFunctionCommand": _FUNCTIONS,
            "DescribeProcedureCommand": "procedures are not lock objects",
            "DescribeQueryCommand": "DESCRIBE QUERY: analyses its query for the schema only, no "
            "data read (its plan is unresolved: the facts cannot name what it reads)",
            "DropFunctionCommand": _FUNCTIONS,
            "DropTempViewCommand": "a temporary view lives in no catalog",
            "ExplainCommand": "EXPLAIN: plans its statement, never runs it",
            "ExternalCommandExecutor": "SparkSession.executeCommand: runs in an external "
            "system, nothing of Spark's catalog",
            "ListArchivesCommand": _RESOURCES,
            "ListFilesCommand": _RESOURCES,
            "ListJarsCommand": _RESOURCES,
            "RefreshFunctionCommand": _FUNCTIONS,
            "ResetCommand": "RESET: " + _SESSION,
            "SetCatalogCommand": "SET CATALOG: " + _SESSION,
            "SetCommand": "SET: " + _SESSION,
            "SetNamespaceCommand": "USE db: " + _SESSION,
            "SetPathCommand": "SET PATH: " + _SESSION,
            "ShowCatalogsCommand": "SHOW CATALOGS: " + _NO_CATALOG,
            "ShowCollationsCommand": "SHOW COLLATIONS: " + _NO_CATALOG,
            "ShowCurrentNamespaceCommand": "SHOW CURRENT NAMESPACE: " + _SESSION,
            "ShowFunctionsCommand": "SHOW [USER] FUNCTIONS: " + _FUNCTIONS,
            "ShowNamespacesCommand": "SHOW DATABASES: a catalog listing, no object read",
            "ShowTablesJsonCommand": "SHOW TABLES ... AS JSON (Spark 4.3): a catalog listing",
            "ShowProceduresCommand": "SHOW PROCEDURES: procedures are not lock objects",
            "StreamingExplainCommand": "EXPLAIN of a streaming query: plans it, never runs it",
        },
    ),
    **_in(
        _SOURCES,
        {
            "RefreshResource": "REFRESH <path>: invalidates cached data only",
        },
    ),
}

_STREAM_QUERY = (
    "a streaming query's write as defined, analysed when the query starts: each micro-batch "
    "runs (and locks) as WriteToMicroBatchDataSource[V1]"
)
NO_LOCK.update(
    {
        "org.apache.spark.sql.catalyst.streaming.WriteToStream": _STREAM_QUERY,
        "org.apache.spark.sql.catalyst.streaming.WriteToStreamStatement": _STREAM_QUERY,
        "org.apache.spark.sql.execution.streaming.continuous.WriteToContinuousDataSource": (
            "continuous processing: one job that never ends, no batch to lock around: NOT LOCKED"
        ),
    }
)

_X_NAMED = "EXCLUSIVE on the table it names"
_V2_TWIN = "v2 form of {}: " + _X_NAMED + ", as its v1 row"
_PIPELINES = "Declarative Pipelines DDL (refused outside a pipeline): " + _X_NAMED

FAIL_SAFE: dict[str, str] = {
    **_in(
        _LOGICAL,
        {
            "AddCheckConstraint": "ALTER TABLE ADD CONSTRAINT ... CHECK: " + _X_NAMED,
            "AddColumns": _V2_TWIN.format("ALTER TABLE ADD COLUMNS"),
            "AddConstraint": "ALTER TABLE ADD CONSTRAINT: " + _X_NAMED,
            "AlterColumns": _V2_TWIN.format("ALTER TABLE ALTER/CHANGE COLUMN"),
            "AlterColumn": _V2_TWIN.format("ALTER TABLE ALTER/CHANGE COLUMN (Spark 3.5)"),
            "AlterTableClusterBy": "ALTER TABLE CLUSTER BY: " + _X_NAMED,
            "AlterTableCollation": "ALTER TABLE DEFAULT COLLATION: " + _X_NAMED,
            "AlterViewAs": _V2_TWIN.format("ALTER VIEW AS"),
            "AlterViewSchemaBinding": _V2_TWIN.format("ALTER VIEW WITH SCHEMA"),
            "AnalyzeColumn": "v2 form of ANALYZE ... FOR COLUMNS (refused on v2 tables): "
            "EXCLUSIVE, stronger than the v1 row's SHARED",
            "AnalyzeTable": "v2 form of ANALYZE TABLE (refused on v2 tables): EXCLUSIVE, "
            "stronger than the v1 row's SHARED",
            "AnalyzeTables": "v2 form of ANALYZE TABLES (refused on v2 catalogs): EXCLUSIVE "
            "on the database, stronger than the v1 row",
            "CommentOnNamespace": "COMMENT ON DATABASE: EXCLUSIVE on the database",
            "CommentOnTable": "COMMENT ON TABLE: " + _X_NAMED,
            "CreateFlowCommand": _PIPELINES,
            "CreateIndex": "CREATE INDEX (v2 catalogs only): " + _X_NAMED,
            "CreateMaterializedViewAsSelect": _PIPELINES,
            "CreateStreamingTable": _PIPELINES,
            "CreateStreamingTableAutoCdc": _PIPELINES + " (Spark 4.3)",
            "CreateStreamingTableAsSelect": _PIPELINES,
            "CreateTable": _V2_TWIN.format("CREATE TABLE"),
            "CreateTableAsSelect": _V2_TWIN.format("CREATE TABLE AS SELECT"),
            "CreateView": _V2_TWIN.format("CREATE VIEW"),
            "DeleteFromTableWithFilters": "v2 DELETE pushed down as filters: " + _X_NAMED,
            "DropColumns": "ALTER TABLE DROP COLUMNS (v2): " + _X_NAMED,
            "DropConstraint": "ALTER TABLE DROP CONSTRAINT: " + _X_NAMED,
            "DropIndex": "DROP INDEX (v2 catalogs only): " + _X_NAMED,
            "DropView": _V2_TWIN.format("DROP VIEW"),
            "InsertOnlyMerge": "MERGE with only insert clauses (v2): " + _X_NAMED,
            "LoadData": _V2_TWIN.format("LOAD DATA"),
            "RecoverPartitions": _V2_TWIN.format("ALTER TABLE RECOVER PARTITIONS"),
            "RenameColumn": "ALTER TABLE RENAME COLUMN (v2): " + _X_NAMED,
            "RepairTable": _V2_TWIN.format("MSCK REPAIR TABLE"),
            "ReplaceTable": "v2 REPLACE TABLE: " + _X_NAMED,
            "SetTableProperties": _V2_TWIN.format("ALTER TABLE SET TBLPROPERTIES"),
            "SetViewProperties": _V2_TWIN.format("ALTER VIEW SET TBLPROPERTIES"),
            "TruncateTable": _V2_TWIN.format("TRUNCATE TABLE"),
            "UnsetTableProperties": _V2_TWIN.format("ALTER TABLE UNSET TBLPROPERTIES"),
            "UnsetViewProperties": _V2_TWIN.format("ALTER VIEW UNSET TBLPROPERTIES"),
        },
    ),
    **_in(
        _COMMAND,
        {
            "CreateMetricViewCommand": "CREATE VIEW ... WITH METRICS: EXCLUSIVE on the view",
            "SetNamespaceCollationCommand": "ALTER DATABASE DEFAULT COLLATION: EXCLUSIVE on "
            "the database",
            "UnsetNamespacePropertiesCommand": "ALTER DATABASE UNSET PROPERTIES: EXCLUSIVE on "
            "the database",
        },
    ),
    "org.apache.spark.sql.execution.streaming.sources.WriteToMicroBatchDataSource": "one "
    "micro-batch into a v2 sink (Kafka, memory, console, foreachBatch, v2 tables): EXCLUSIVE on "
    "the table its sink names, if any (a foreachBatch's own statements lock as they run)",
    "org.apache.spark.sql.metricview.logical.CreateMetricView": "CREATE VIEW ... WITH METRICS "
    "(unresolved form): EXCLUSIVE on the view",
}


def simple_name(full_name: str) -> str:
    """``a.b.C`` → ``C``: how the docs' tables and lists name a class."""
    return full_name.rsplit(".", 1)[-1]
