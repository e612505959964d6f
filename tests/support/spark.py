"""The one way tests (and the Spark benchmark) build a local Spark session with sparklock.

Each test module gets its own session from the ``spark`` fixture in ``conftest.py`` (module scope:
the modules create tables of the same names, each in its own warehouse); a module says what it
needs with a module-level ``SPARK = SparkSpec(...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark only where a module builds a session
    from pyspark.sql import SparkSession

#: Session conf key holding the warehouse directory of the module's session (``warehouse``
#: fixture); ``spark.test.*`` is ours, no Spark or sparklock setting.
WAREHOUSE_KEY = "spark.test.sparklock.warehouse"


@dataclass(frozen=True)
class SparkSpec:
    """What a test module's session needs beyond the common local settings."""

    app: str
    cores: int = 2
    log_level: str = "ERROR"
    #: builder conf (static: it becomes JVM system properties for every later context too)
    conf: Mapping[str, str] = field(default_factory=dict)
    #: session conf pointing the module at the test ZooKeeper server (manager, quorum and this
    #: namespace); None: the default (embedded) manager
    zookeeper_namespace: str | None = None
    #: more session conf, set after creation and unset at the end of the module
    session_conf: Mapping[str, str] = field(default_factory=dict)
    #: Hive support with a Derby metastore in the module's temporary directory
    hive: bool = False
    #: statements run once the session exists (tables the module's tests share)
    setup_sql: Sequence[str] = ()
    #: anything else to prepare (UDFs, ...): runs before ``setup_sql``
    setup: Callable[[SparkSession], None] | None = None


def build_session(
    app: str,
    warehouse: Path | str,
    *,
    cores: int = 2,
    conf: Mapping[str, str] | None = None,
    hive_root: Path | None = None,
    log_level: str = "ERROR",
) -> SparkSession:
    """A local sparklock session: no UI, no progress bar, two shuffle partitions."""
    from pyspark.sql import SparkSession

    import sparklock

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(f"sparklock-{app}")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    if hive_root is not None:
        active = SparkSession.getActiveSession()
        if active is not None:  # another module's session: one SparkContext per process
            active.stop()
        builder = (
            builder.config(
                "spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={hive_root / 'metastore_db'};create=true",
            )
            .config("spark.hadoop.datanucleus.schema.autoCreateAll", "true")
            .config("spark.hadoop.hive.metastore.schema.verification", "false")
            .enableHiveSupport()
        )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = sparklock.configure(builder).getOrCreate()
    if hive_root is not None:
        # before the metastore client starts (lazily, on first catalog use): Derby's log in tmp
        derby_log = str(hive_root / "derby.log")
        session._jvm.java.lang.System.setProperty("derby.stream.error.file", derby_log)
    session.sparkContext.setLogLevel(log_level)
    return session


def register_udfs(session: SparkSession) -> None:
    """slow(x, seconds) sleeps in the task; boom(x) raises (temporary: per session).

    Closures, so they are pickled by value (Python workers cannot import the tests)."""
    import time

    def slow(x, seconds):
        time.sleep(float(seconds))
        return x

    def boom(x):
        raise ValueError(f"boom on {x}")

    session.udf.register("slow", slow, "int")
    session.udf.register("boom", boom, "int")


def zookeeper_conf(address: str, namespace: str) -> dict[str, str]:
    """Session conf that sends a session's locks to the ZooKeeper at ``address``."""
    return {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": address,
        "spark.sparklock.zookeeper.namespace": namespace,
    }


def catalog_partition_specs(session: SparkSession, table: str, database: str = "default") -> list:
    """Every partition spec of a table as the session catalog holds it (``listPartitions``,
    through py4j): what a full read's facts must name, read the expensive way."""
    jvm = session._jvm
    in_db = jvm.scala.Option.apply(database)
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier(table, in_db)
    catalog = session._jsparkSession.sessionState().catalog()
    parts = catalog.listPartitions(ident, jvm.scala.Option.empty()).iterator()
    specs = []
    while parts.hasNext():
        pairs = parts.next().spec().iterator()
        spec = {}
        while pairs.hasNext():
            pair = pairs.next()
            spec[pair._1()] = pair._2()
        specs.append(spec)
    return specs
