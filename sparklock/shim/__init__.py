"""The JVM shim jar for the running Spark: packaged, cached, or (last resort) compiled.

``jar_path()`` answers, in order:

1. ``SPARKLOCK_SHIM_JAR=/path/to.jar``: a jar the user built (it must be for this Spark line);
2. the wheel's prebuilt jar for this Spark line (``sparklock/shim/jars``, see ``prebuilt``): no
   compiler, no writes;
3. a jar compiled by ``javac`` against the running Spark's jars, cached under
   ``$XDG_CACHE_HOME/sparklock/shim`` (default ``~/.cache/sparklock/shim``; ``SPARKLOCK_SHIM_CACHE``
   moves it) in ``spark-<version>-<source hash>``: a checkout, or a Spark newer than the wheel.
   The key needs no javac, so a cached jar is used on a machine with only a Java runtime.

``python -m sparklock.shim`` prints the jar path.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Callable
from pathlib import Path

from . import prebuilt
from .compile import (
    JAR_NAME,
    build,
    built_for,
    compat_dirs,
    compat_root,
    find_javac,
    source_dir,
    source_hash,
)
from .errors import ShimBuildError
from .locate import scala_version, spark_jars_dir, spark_line, spark_version, user_cache

EXTENSION_CLASS = "io.sparklock.shim.SparkLockExtensions"
BRIDGE_CLASS = "io.sparklock.shim.SparkLockBridge"
PLUGIN_CLASS = "io.sparklock.shim.SparkLockPlugin"
COMMIT_PROTOCOL_CLASS = "io.sparklock.shim.LeaseCommitProtocol"

__all__ = [
    "BRIDGE_CLASS",
    "COMMIT_PROTOCOL_CLASS",
    "EXTENSION_CLASS",
    "JAR_NAME",
    "PLUGIN_CLASS",
    "ShimBuildError",
    "built_for",
    "cache_root",
    "compat_dirs",
    "compat_root",
    "jar_path",
    "source_dir",
    "spark_jars_dir",
    "spark_version",
]


def cache_root() -> Path:
    env = os.environ.get("SPARKLOCK_SHIM_CACHE")
    return Path(env) if env else user_cache() / "shim"


def jar_path() -> Path:
    """The jar to put on the driver's class path for the running Spark."""
    version = spark_version()
    prebuilt_env = os.environ.get("SPARKLOCK_SHIM_JAR")
    if prebuilt_env:
        return _user_jar(Path(prebuilt_env), version)
    packaged = prebuilt.packaged_jar(version)
    if packaged is not None:
        return packaged
    return _cached_build(version)


def _user_jar(path: Path, version: str) -> Path:
    if not path.is_file():
        raise ShimBuildError(f"SPARKLOCK_SHIM_JAR={path} does not exist")
    built = built_for(path)
    if built is None or spark_line(built) != spark_line(version):
        raise ShimBuildError(
            f"SPARKLOCK_SHIM_JAR={path} was built for Spark {built or '(unknown)'}, but pyspark "
            f"{version} is installed: build it against this pyspark "
            "(python -m sparklock.shim) or unset SPARKLOCK_SHIM_JAR"
        )
    return path.resolve()


def _cached_build(version: str) -> Path:
    jars = spark_jars_dir()
    scala = scala_version(jars)
    root = cache_root()
    target = root / f"spark-{version}-{source_hash(version, scala)}" / JAR_NAME
    if target.is_file():
        return target
    javac = find_javac()
    if javac is None:
        lines = prebuilt.packaged_lines()
        looked = (
            f"this install carries jars for Spark {', '.join(lines)} only"
            if lines
            else f"no packaged jars in {prebuilt.jars_dir()}"
        )
        raise ShimBuildError(
            f"Spark {version}: no sparklock jar for Spark {spark_line(version)} ({looked}; none "
            f"cached at {target}) and javac was not found to build one (looked in $JAVA_HOME/bin "
            "and on PATH): install a JDK 17+ and set JAVA_HOME, or a sparklock wheel with a jar "
            "for this Spark line, or set SPARKLOCK_SHIM_JAR to a jar built for it"
        )
    return build_once(root, target, lambda: build(javac, jars, version, scala, target))


def build_once(root: Path, target: Path, make: Callable[[], object]) -> Path:
    """``target``, made by ``make()`` unless it exists, under the cache's build lock: another
    process may be building the same key."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not target.is_file():
                make()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target


def main(argv: list[str] | None = None) -> int:
    try:
        print(jar_path())
    except ShimBuildError as e:
        print(str(e), file=sys.stderr)
        return 1
    return 0
