"""Delta Lake for the tests: delta-spark's own builder helper, its jars downloaded once.

Users add Delta with ``configure_spark_with_delta_pip(builder)`` (delta-spark's helper: it sets
``spark.jars.packages`` to the Delta artifact of the installed delta-spark, which Spark's own Ivy
resolver downloads when the JVM starts) plus Delta's extension and catalog. The tests do exactly
that, with ``spark.jars.ivy`` pointed at ``~/.cache/sparklock/delta/<delta version>/ivy``: the
first run downloads the jars from Maven Central into it, every later run resolves them from that
cache and downloads nothing.

A pytest process whose JVM already runs (an earlier module's session) cannot take new
``spark.jars.packages``; there the cached jar files are put on the running JVM's context class
loader before the module's SparkContext starts, as ``sparklock.configure`` does with its own jar
under ``spark-submit`` (see :func:`load_into_running_jvm`).

delta-spark pins its pyspark line (3.3.x: pyspark 3.5.3+ below 3.6; 4.4.1: 4.0.1 to 4.2.0), so
``tests/versions.py`` installs the ``delta`` extra only where a release accepts the pyspark under
test; elsewhere (pyspark 4.3: no Delta release yet) :data:`MISSING` says why and the Delta tests
skip with it.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyspark
import pytest

from tests.support import ivy

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
CATALOG_KEY = "spark.sql.catalog.spark_catalog"
PACKAGES_KEY = "spark.jars.packages"
IVY_KEY = "spark.jars.ivy"


def _installed() -> str | None:
    try:
        import delta  # noqa: F401
    except ImportError:
        return None
    return importlib.metadata.version("delta-spark")


VERSION: str | None = _installed()
"""The installed delta-spark's version, or None."""

MISSING: str | None = (
    None
    if VERSION is not None
    else f"pyspark {pyspark.__version__}: delta-spark is not installed here, and no Delta "
    "release is built for this Spark line (Delta 3.3.x is for Spark 3.5, 4.4.x for 4.0.1 to "
    "4.2.0); tests/versions.py installs the `delta` extra where one is"
)
"""Why the Delta tests cannot run with this pyspark, or None."""

needs_delta = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/sparklock/delta/<delta version>`` (one Ivy cache per Delta release, so
    its ``jars`` directory holds exactly that release's jars)."""
    from sparklock.shim.locate import user_cache

    return user_cache() / "delta" / (VERSION or "none")


def ivy_dir() -> Path:
    return cache_dir() / "ivy"


def artifact() -> str:
    """What ``configure_spark_with_delta_pip`` asks Spark to resolve (a builder holds options
    only: no JVM starts)."""
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    return str(configure_spark_with_delta_pip(SparkSession.Builder())._options[PACKAGES_KEY])


def with_delta(builder: Any) -> Any:
    """``builder`` as a Delta user writes it: Delta's extension (appended) and catalog, then
    delta-spark's helper, with Spark's Ivy resolver caching into :func:`ivy_dir`."""
    from delta import configure_spark_with_delta_pip

    options = builder._options
    extensions = [e for e in str(options.get("spark.sql.extensions") or "").split(",") if e]
    if EXTENSION not in extensions:
        extensions.append(EXTENSION)
    builder.config("spark.sql.extensions", ",".join(extensions))
    builder.config(CATALOG_KEY, CATALOG)
    builder.config(IVY_KEY, str(ivy_dir()))
    jars()  # downloaded once, under a lock: the JVM then resolves from a complete cache
    return configure_spark_with_delta_pip(builder)


_RESOLVE = """
from pyspark.sql import SparkSession
from delta import configure_spark_with_delta_pip
b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
b = configure_spark_with_delta_pip(b.config("spark.jars.ivy", {ivy!r}))
b.getOrCreate().stop()
"""


def jars() -> list[Path]:
    """The Delta jar files in the cache, resolved by Spark's own resolver on the first call of
    the first run (:func:`tests.support.ivy.resolve_once`)."""
    done = ivy.resolve_once(cache_dir(), _RESOLVE.format(ivy=str(ivy_dir())), artifact())
    found = sorted((ivy_dir() / "jars").glob("*.jar"))
    if not any("delta-spark" in j.name for j in found):
        raise RuntimeError(f"no delta-spark jar in {ivy_dir() / 'jars'}: remove {done}")
    return found


def load_into_running_jvm() -> None:
    """If this process runs a JVM already, add the cached Delta jars to the class loader Spark
    loads extensions and catalogs through (the gateway thread's context loader), before the next
    SparkContext starts: what ``spark.jars.packages`` does for a JVM not started yet."""
    from pyspark import SparkContext

    if SparkContext._gateway is None:
        return
    jvm = SparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(EXTENSION, False, loader)
        return
    except Exception:  # noqa: BLE001 - py4j raises Py4JJavaError for ClassNotFoundException
        pass
    for jar in jars():
        loader.addURL(jvm.java.io.File(str(jar)).toURI().toURL())


def delta_session(app: str, warehouse: Path, **conf: str) -> SparkSession:
    """A local sparklock session with Delta (the module's one session): a running JVM gets the
    jars first, and a session of an earlier module is stopped (one SparkContext per process)."""
    from pyspark.sql import SparkSession

    import sparklock

    load_into_running_jvm()
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(f"sparklock-{app}")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        # Delta rebuilds a table's state from its log in 50 tasks by default: a few rows here
        .config("spark.databricks.delta.snapshotPartitions", "2")
        # VACUUM lists a table's directories in up to 10000 tasks by default
        .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "2")
    )
    for key, value in conf.items():
        builder.config(key, value)
    session = sparklock.configure(with_delta(builder)).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


_STATIC = ("spark.sql.extensions", CATALOG_KEY, PACKAGES_KEY, IVY_KEY)


def restore_system_properties(jvm: Any, before: dict[str, str | None]) -> None:
    """Put back the JVM system properties a Delta session's launch may have set: the first
    SparkContext's conf becomes system properties that every later context of the process
    inherits, and later modules must not get Delta's catalog."""
    system = jvm.java.lang.System
    for key, value in before.items():
        if value is None:
            system.clearProperty(key)
        else:
            system.setProperty(key, value)


def system_properties(jvm: Any) -> dict[str, str | None]:
    return {k: jvm.java.lang.System.getProperty(k) for k in _STATIC}
