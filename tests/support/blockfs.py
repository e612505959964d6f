"""The blocking test file system (``blockfs://``, tests/support/blockfs/): compiled once per source
hash the way the shim is, put on the driver's class path, and driven from the test over py4j.

A table whose location is ``blockfs:///<dir>`` lives in ``<dir>`` on the local disk; the test
arms a hold on the next delete or rename of a matching path, waits until a statement sits in it,
does its fault, and releases it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from sparklock.shim import build_once, spark_jars_dir, spark_version
from sparklock.shim.compile import JAVA_RELEASE, find_javac, javac_jar
from sparklock.shim.locate import user_cache

SOURCES = Path(__file__).resolve().parent / "blockfs"
CLASS = "io.sparklock.testfs.BlockingFileSystem"
SCHEME = "blockfs"


def jar() -> Path:
    """The test jar for the installed pyspark, built if this source hash has none yet."""
    files = sorted(SOURCES.rglob("*.java"))
    h = hashlib.sha256(JAVA_RELEASE.encode())
    for f in files:
        h.update(f.read_bytes())
    root = user_cache() / "testjars"
    target = root / f"blockfs-{spark_version()}-{h.hexdigest()[:16]}.jar"
    javac = find_javac()
    if javac is None and not target.is_file():
        raise RuntimeError("javac not found: the blocking test file system cannot be built")
    return build_once(
        root,
        target,
        lambda: javac_jar(str(javac), files, [str(spark_jars_dir() / "*")], target, {}),
    )


def builder_conf() -> dict[str, str]:
    """Builder conf that registers the scheme from the context's start (the Hive client copies
    the Hadoop configuration once, when it starts), the jar on ``spark.jars``; a JVM this process
    already runs (an earlier module's) gets the jar on the class loader Spark and Hadoop load
    through, which is what ``spark.jars`` does for a JVM not started yet."""
    from pyspark import SparkContext

    path = jar()
    if SparkContext._gateway is not None:
        jvm = SparkContext._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        try:
            jvm.java.lang.Class.forName(CLASS, False, loader)
        except Exception:  # noqa: BLE001 - py4j raises Py4JJavaError for ClassNotFoundException
            loader.addURL(jvm.java.io.File(str(path)).toURI().toURL())
    return {"spark.jars": str(path), f"spark.hadoop.fs.{SCHEME}.impl": CLASS}


def control(spark: Any) -> Any:
    """The file system's class in the driver: its static ``hold``, ``held``, ``release``."""
    return spark._jvm.io.sparklock.testfs.BlockingFileSystem


def url(path: Path) -> str:
    """``path`` under the blocking scheme."""
    return f"{SCHEME}://{path.resolve()}"
