"""Spark's Hive client for a Hive 4 metastore, so that test drivers share it as their catalog.

The Hive client built into pyspark's jars is Hive 2.3: against a Hive 4 metastore every table
call fails (``Invalid method name: 'get_table'``; Hive 4 removed the call). Spark 4 talks to it
with its Hive 4.0 client (``spark.sql.hive.metastore.version=4.0.1``) loaded from
``spark.sql.hive.metastore.jars``. Spark can download those itself (``jars=maven``), but it
resolves them again at every session start (minutes here); ``mvn`` resolves them once into
``~/.cache/sparklock/hive-client/<version>/lib`` and the drivers load them from there
(``jars=path``). Spark 3.5 has no Hive 4 client (its newest is 3.1, which also calls
``get_table``): there the drivers cannot share a Hive 4 metastore as their catalog.
"""

from __future__ import annotations

from pathlib import Path

from tests.support import metastore

VERSION = "4.0.1"
# What Spark's own resolution of a Hive 4.0 client asks for: Hive's metastore client, ql
# (``Hive``), common and serde, over the Hadoop client of the pyspark in use.
_HIVE_EXCLUDE = [
    "jdk.tools:jdk.tools",
    "org.apache.hadoop:*",  # Spark's shaded Hadoop client below
    "org.apache.calcite:*",  # the query planner: no metastore call needs it
    "org.apache.tez:*",
    "org.pentaho:*",  # not on Maven Central
]


def missing_requirements() -> str | None:
    """Why no driver can use the test metastore as its catalog here, or None."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        return (
            f"pyspark {pyspark.__version__} has no Hive 4 metastore client (its newest, 3.1, "
            "calls get_table, which Hive 4 removed)"
        )
    return metastore.missing_requirements()


def hadoop_client_version() -> str:
    """The version of the shaded Hadoop client in pyspark's jars (``hadoop-client-api-*``)."""
    from pyspark.find_spark_home import _find_spark_home

    jars = Path(_find_spark_home()) / "jars"
    [api] = sorted(jars.glob("hadoop-client-api-*.jar"))
    return api.name.removeprefix("hadoop-client-api-").removesuffix(".jar")


def install(version: str = VERSION) -> Path:
    """The client's jar directory, resolved once per Hive and Hadoop version."""
    hadoop = hadoop_client_version()
    home = metastore.cache_root().parent / "hive-client" / f"{version}-hadoop-{hadoop}"
    done = home / ".complete"
    if done.exists():
        return home / "lib"
    with metastore._exclusive(home.parent / f".{home.name}.lock"):
        if done.exists():
            return home / "lib"
        home.mkdir(parents=True, exist_ok=True)
        deps = [
            metastore._dependency(f"org.apache.hive:hive-{name}:{version}", _HIVE_EXCLUDE)
            for name in ("metastore", "exec", "common", "serde")
        ] + [
            metastore._dependency(f"org.apache.hadoop:hadoop-client-{k}:{hadoop}", [])
            for k in ("api", "runtime")
        ]
        (home / "pom.xml").write_text(metastore._POM.format(dependencies="\n".join(deps)))
        metastore._mvn(
            ["dependency:copy-dependencies", "-DoutputDirectory=lib", "-DincludeScope=runtime"],
            home,
        )
        done.write_text(version)
    return home / "lib"


def catalog_conf(uri: str) -> dict[str, str]:
    """Builder conf of a driver whose catalog is the metastore at ``uri`` (static: set before
    the driver's SparkContext starts)."""
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.hive.metastore.uris": uri,
        "spark.sql.hive.metastore.version": VERSION,
        "spark.sql.hive.metastore.jars": "path",
        "spark.sql.hive.metastore.jars.path": f"{install().as_uri()}/*.jar",
    }
