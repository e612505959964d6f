"""Apache Iceberg on a session builder, the ecosystem's way: ``configure_iceberg(builder, ...)``.

Iceberg ships no pip package with a builder helper (as delta-spark's
``configure_spark_with_delta_pip`` is for Delta), so this is one: it asks Spark's own Ivy resolver
for Iceberg's Spark runtime jar of the installed Spark line (``spark.jars.packages``, resolved
from Maven Central when the JVM starts), adds Iceberg's SQL extensions (``ALTER TABLE ... ADD
PARTITION FIELD``, branches, tags, ...) and declares one Iceberg catalog. Resolved jars are cached
under ``~/.cache/sparklock/iceberg/<iceberg version>/ivy`` unless the builder chose a
``spark.jars.ivy`` of its own, so only the first session of a machine downloads anything.

It composes with :func:`sparklock.configure` in either order: ``configure`` keeps every other
extension and moves its own last when the session starts. Nothing here starts a JVM.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..errors import SparkLockSetupError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXTENSION = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
SESSION_CATALOG_CLASS = "org.apache.iceberg.spark.SparkSessionCatalog"
SESSION_CATALOG = "spark_catalog"
PACKAGES_KEY = "spark.jars.packages"
IVY_KEY = "spark.jars.ivy"


@dataclass(frozen=True)
class Runtime:
    """Iceberg's Spark runtime for one Spark line: ``iceberg-spark-runtime-<line>_<scala>``."""

    spark_line: str
    scala: str
    version: str

    @property
    def coordinate(self) -> str:
        return (
            f"org.apache.iceberg:iceberg-spark-runtime-{self.spark_line}_{self.scala}:"
            f"{self.version}"
        )


#: The newest Iceberg release built for each Spark line (all on Maven Central). A line not here
#: has no Iceberg runtime yet: :func:`missing` says so.
RUNTIMES: dict[str, Runtime] = {
    "3.5": Runtime("3.5", "2.12", "1.11.0"),
    "4.0": Runtime("4.0", "2.13", "1.10.0"),
    "4.1": Runtime("4.1", "2.13", "1.11.0"),
}
#: The Iceberg release expected to bring a Spark line that has no runtime yet (Iceberg adds a
#: Spark line in a minor release once that Spark is out).
NEXT_RELEASES: dict[str, str] = {
    "4.2": "Iceberg 1.12.0 (its Spark 4.2 support is merged, apache/iceberg#14984)",
}


def missing(spark_version: str | None = None) -> str | None:
    """Why Iceberg cannot run with this Spark (``None`` when a runtime exists)."""
    from ..shim.locate import spark_line

    line = spark_line(spark_version)
    if line in RUNTIMES:
        return None
    known = ", ".join(f"{r.version} for {s}" for s, r in RUNTIMES.items())
    expected = NEXT_RELEASES.get(line)
    when = (
        f"{expected} is the release expected to add it"
        if expected
        else "no Iceberg release has announced it yet"
    )
    return f"no Iceberg Spark runtime is built for Spark {line} yet (Iceberg {known}); {when}"


def runtime(spark_version: str | None = None) -> Runtime:
    """The Iceberg runtime for this Spark line, or ``SPARKLOCK_SETUP_FAILED`` saying why none."""
    from ..shim.locate import spark_line

    reason = missing(spark_version)
    if reason is not None:
        raise SparkLockSetupError(reason)
    return RUNTIMES[spark_line(spark_version)]


def cache_dir(version: str) -> Path:
    """``~/.cache/sparklock/iceberg/<iceberg version>``: one Ivy cache per Iceberg release."""
    from ..shim.locate import user_cache

    return user_cache() / "iceberg" / version


def _append(current: object, item: str) -> str:
    items = [x.strip() for x in str(current or "").split(",") if x.strip()]
    if item not in items:
        items.append(item)
    return ",".join(items)


def configure_iceberg(
    builder: SparkSession.Builder,
    catalog: str = "ice",
    *,
    catalog_type: Literal["hadoop", "hive", "rest"] = "hadoop",
    warehouse: str | Path | None = None,
    uri: str | None = None,
    spark_version: str | None = None,
) -> SparkSession.Builder:
    """Add Iceberg to ``builder`` and return it: the runtime jar of the installed Spark line on
    ``spark.jars.packages``, Iceberg's SQL extensions, and the catalog ``catalog``.

    ``catalog="spark_catalog"`` puts Iceberg behind the session catalog
    (``SparkSessionCatalog``: Iceberg and non-Iceberg tables side by side); any other name is a
    catalog of its own (``SparkCatalog``). ``catalog_type`` and ``warehouse`` / ``uri`` are
    Iceberg's catalog properties (``hive`` with ``uri="thrift://..."`` is a ``HiveCatalog`` on a
    metastore). Lists are appended to, never replaced; a ``spark.jars.ivy`` the builder already
    has is kept. Raises ``SPARKLOCK_SETUP_FAILED`` on a Spark line no Iceberg release supports.
    """
    options = getattr(builder, "_options", None)
    if options is None:
        raise SparkLockSetupError(
            f"configure_iceberg expects a pyspark SparkSession.Builder, got {type(builder)!r}"
        )
    found = runtime(spark_version)
    builder.config(PACKAGES_KEY, _append(options.get(PACKAGES_KEY), found.coordinate))
    if not options.get(IVY_KEY):
        builder.config(IVY_KEY, str(cache_dir(found.version) / "ivy"))
    builder.config("spark.sql.extensions", _append(options.get("spark.sql.extensions"), EXTENSION))
    key = f"spark.sql.catalog.{catalog}"
    builder.config(key, SESSION_CATALOG_CLASS if catalog == SESSION_CATALOG else CATALOG_CLASS)
    builder.config(f"{key}.type", catalog_type)
    if warehouse is not None:
        builder.config(f"{key}.warehouse", str(warehouse))
    if uri is not None:
        builder.config(f"{key}.uri", uri)
    return builder
