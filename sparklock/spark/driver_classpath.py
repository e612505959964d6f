"""The shim jar on the driver JVM's own class path when Python launches that JVM.

``spark.jars`` alone puts the jar in Spark's mutable class loader, which a HiveServer2 session
closes when it ends (Hive's session state closes the class loaders it was opened with): after the
first Thrift client disconnects, shim classes not loaded yet can no longer be loaded. The JVM's
system class path (``spark.driver.extraClassPath``, read by the launcher before the JVM starts)
cannot be closed. Executors need nothing: the shim runs in the driver only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

KEY = "spark.driver.extraClassPath"


def launches_jvm() -> bool:
    """True when the next ``getOrCreate`` starts the driver JVM from this Python process (not
    under ``spark-submit``, whose JVM runs already; not after an earlier SparkContext)."""
    from pyspark import SparkContext

    return SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ


def spark_defaults_value(key: str) -> str:
    """``key`` in ``spark-defaults.conf`` (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``), as the
    launcher reads it; empty when absent."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir:
        from pyspark.find_spark_home import _find_spark_home

        conf_dir = str(Path(_find_spark_home()) / "conf")
    path = Path(conf_dir) / "spark-defaults.conf"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for line in lines:
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i, ch in enumerate(line) if ch in " \t=:"), default=len(line))
        if line[:cut] == key:
            return line[cut:].lstrip(" \t").lstrip("=:").strip()
    return ""


def with_jar(current: str, jar: str) -> str:
    """``jar`` appended to a class path (``os.pathsep``-separated), once."""
    entries = [e for e in current.split(os.pathsep) if e.strip()]
    if jar not in entries:
        entries.append(jar)
    return os.pathsep.join(entries)


def driver_classpath(options: Mapping[str, Any], jar: str) -> str:
    """The builder's ``spark.driver.extraClassPath`` with ``jar`` appended.

    The builder's value passes to the launcher as ``--conf``, which hides ``spark-defaults.conf``'s
    value for the same key: when the builder has none, the defaults file's entries are kept in
    front of the jar. A ``--driver-class-path`` in ``PYSPARK_SUBMIT_ARGS`` still replaces it (the
    launcher reads it last); the jar then reaches the driver through ``spark.jars`` only."""
    current = str(options.get(KEY) or "") or spark_defaults_value(KEY)
    return with_jar(current, jar)


def add_shim(options: Mapping[str, Any], builder: Any, jar: str) -> None:
    """Sets :func:`driver_classpath` on ``builder`` when this process launches the JVM."""
    if launches_jvm():
        builder.config(KEY, driver_classpath(options, jar))
