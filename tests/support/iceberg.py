"""Apache Iceberg for the tests: ``sparklock.spark.iceberg.configure_iceberg``, jars cached.

The module's one session has a hadoop-type Iceberg catalog ``ice`` on a temporary warehouse and
Iceberg's SQL extensions, exactly as a user configures it; Spark's own Ivy resolver fetches the
runtime jar into ``~/.cache/sparklock/iceberg/<version>/ivy`` on the first run of a machine and
finds it there on every later one.

A pytest process whose JVM already runs (an earlier module's session) cannot take new
``spark.jars.packages``: the cached jar is then put on the running JVM's context class loader
before the module's SparkContext starts (:func:`load_into_running_jvm`), as for Delta.

Iceberg builds runtimes for Spark 3.5, 4.0 and 4.1 only; elsewhere :data:`MISSING` says why and
the tests skip with it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sparklock.spark import iceberg
from tests.support import ivy

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CATALOG = "ice"
MISSING: str | None = iceberg.missing()
"""Why the Iceberg tests cannot run with this pyspark, or None."""
RUNTIME: iceberg.Runtime | None = None if MISSING else iceberg.runtime()

needs_iceberg = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

_STATIC = (
    "spark.sql.extensions",
    iceberg.PACKAGES_KEY,
    iceberg.IVY_KEY,
    f"spark.sql.catalog.{CATALOG}",
    f"spark.sql.catalog.{CATALOG}.type",
    f"spark.sql.catalog.{CATALOG}.warehouse",
    f"spark.sql.catalog.{iceberg.SESSION_CATALOG}",
    f"spark.sql.catalog.{iceberg.SESSION_CATALOG}.type",
    f"spark.sql.catalog.{iceberg.SESSION_CATALOG}.warehouse",
)


def ivy_dir() -> Path:
    assert RUNTIME is not None, MISSING
    return iceberg.cache_dir(RUNTIME.version) / "ivy"


_RESOLVE = """
from pyspark.sql import SparkSession
from sparklock.spark.iceberg import configure_iceberg
b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
configure_iceberg(b).getOrCreate().stop()
"""


def jars() -> list[Path]:
    """The runtime jar in the cache, resolved by Spark's own resolver on the first call of the
    first run of a machine (:func:`tests.support.ivy.resolve_once`)."""
    assert RUNTIME is not None, MISSING
    name = f"iceberg-spark-runtime-{RUNTIME.spark_line}_{RUNTIME.scala}"
    done = ivy.resolve_once(ivy_dir().parent, _RESOLVE, RUNTIME.coordinate)
    found = sorted((ivy_dir() / "jars").glob(f"*{name}*.jar"))
    if not found:
        raise RuntimeError(f"no {name} jar in {ivy_dir() / 'jars'}: remove {done}")
    return found


def runtime_jar() -> Path:
    return jars()[0]


def load_into_running_jvm() -> None:
    """If this process runs a JVM already, add the cached runtime jar to the class loader Spark
    loads extensions and catalogs through, before the next SparkContext starts."""
    from pyspark import SparkContext

    if SparkContext._gateway is None:
        return
    jvm = SparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(iceberg.EXTENSION, False, loader)
        return
    except Exception:  # noqa: BLE001 - py4j raises Py4JJavaError for ClassNotFoundException
        pass
    for jar in jars():
        loader.addURL(jvm.java.io.File(str(jar)).toURI().toURL())


def system_properties(jvm: Any) -> dict[str, str | None]:
    return {k: jvm.java.lang.System.getProperty(k) for k in _STATIC}


def restore_system_properties(jvm: Any, before: dict[str, str | None]) -> None:
    """Put back the JVM system properties this module's session set at launch (the first
    SparkContext's conf is inherited by every later context of the process)."""
    system = jvm.java.lang.System
    for key, value in before.items():
        if value is None:
            system.clearProperty(key)
        else:
            system.setProperty(key, value)


def session_catalog(root: Path) -> dict[str, str]:
    """The conf of Iceberg behind the session catalog (``SparkSessionCatalog``: Iceberg tables
    beside the built-in catalog's), on a hadoop warehouse under ``root``."""
    key = f"spark.sql.catalog.{iceberg.SESSION_CATALOG}"
    return {
        key: iceberg.SESSION_CATALOG_CLASS,
        f"{key}.type": "hadoop",
        f"{key}.warehouse": str(root / "session"),
    }


def iceberg_session(app: str, warehouse: Path, **conf: str) -> SparkSession:
    """A local sparklock session with the Iceberg catalog ``ice`` on ``warehouse`` (the module's
    one session): a running JVM gets the jar first, an earlier module's session is stopped."""
    from pyspark.sql import SparkSession

    import sparklock

    jars()  # the cache filled before any JVM asks for it
    load_into_running_jvm()
    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(f"sparklock-{app}")
        .config("spark.sql.warehouse.dir", str(warehouse / "spark"))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    for key, value in conf.items():
        builder.config(key, value)
    iceberg.configure_iceberg(builder, CATALOG, warehouse=warehouse / "iceberg")
    session = sparklock.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextmanager
def module_session(
    tmp_path_factory: Any, app: str, setup_sql: Sequence[str] = (), session_catalog_too=False
) -> Iterator[SparkSession]:
    """A test module's one Iceberg session (:func:`iceberg_session`, the catalog ``ice``; with
    ``session_catalog_too`` Iceberg behind ``spark_catalog`` as well) after ``setup_sql``; skips
    where Iceberg builds no runtime. On exit it is stopped and the JVM system properties its
    launch set are put back, so that later modules' sessions do not inherit Iceberg's."""
    from pyspark import SparkContext

    if MISSING:
        pytest.skip(MISSING)
    root = tmp_path_factory.mktemp(app)
    before = system_properties(SparkContext._jvm) if SparkContext._jvm else None
    conf = session_catalog(root) if session_catalog_too else {}
    session = iceberg_session(app, root, **conf)
    for statement in setup_sql:
        session.sql(statement)
    try:
        yield session
    finally:
        jvm = session._jvm
        session.stop()
        restore_system_properties(jvm, before or dict.fromkeys(system_properties(jvm)))
