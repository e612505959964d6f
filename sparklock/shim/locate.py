"""Where the running Spark is: its version, its jars, and where sparklock may write.

``pyspark.__file__`` is not enough: under ``spark-submit`` pyspark is imported from
``$SPARK_HOME/python/lib/pyspark.zip``, which has no ``jars`` next to it. The jars are then found
through ``SPARK_HOME`` (spark-submit sets it) or pyspark's own ``find_spark_home``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ShimBuildError


def spark_version() -> str:
    """The installed pyspark's version (the Spark the shim runs in)."""
    import pyspark

    return pyspark.__version__


def version_tuple(text: str) -> tuple[int, ...]:
    """``"4.1.4"`` -> ``(4, 1, 4)``; a suffix such as ``.dev0`` or ``rc1`` is ignored."""
    parts: list[int] = []
    for piece in text.split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def spark_line(version: str | None = None) -> str:
    """``"4.1.4"`` -> ``"4.1"``: jars built for one patch release serve the whole line."""
    return ".".join(str(p) for p in version_tuple(version or spark_version())[:2])


def _candidates() -> list[Path]:
    import pyspark

    found = [Path(pyspark.__file__).resolve().parent / "jars"]
    home = os.environ.get("SPARK_HOME")
    if home:
        found.append(Path(home) / "jars")
    try:
        from pyspark.find_spark_home import _find_spark_home

        found.append(Path(_find_spark_home()) / "jars")
    except Exception:  # noqa: BLE001 - it exits or raises when it finds nothing
        pass
    return found


def spark_jars_dir() -> Path:
    """The running Spark's jars: next to pyspark, else ``$SPARK_HOME/jars``."""
    candidates = _candidates()
    for jars in candidates:
        if jars.is_dir() and any(jars.glob("spark-core_*.jar")):
            return jars
    raise ShimBuildError(
        "no Spark jars found (looked in "
        + ", ".join(str(c) for c in dict.fromkeys(candidates))
        + "): install pyspark with pip or set SPARK_HOME"
    )


def scala_version(jars: Path | None = None) -> str:
    """Scala's binary version of the Spark jars (``2.12`` / ``2.13``), from scala-library."""
    jars = jars or spark_jars_dir()
    for jar in sorted(jars.glob("scala-library-*.jar")):
        full = jar.name[len("scala-library-") : -len(".jar")]
        return ".".join(full.split(".")[:2])
    raise ShimBuildError(f"no scala-library jar in {jars}")


def user_cache() -> Path:
    """sparklock's cache: ``$XDG_CACHE_HOME/sparklock``, else ``~/.cache/sparklock`` (never the
    install directory: site-packages may be read-only or shared)."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "sparklock"
