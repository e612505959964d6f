"""The jars a wheel carries: one per supported Spark line, compiled at packaging time.

``sparklock/shim/jars/`` holds ``sparklock-shim-spark<line>.jar`` for each line listed in its
``lines.txt`` (built by ``sparklock.shim.package``). The running Spark's ``major.minor`` picks the
jar, so a wheel install needs no compiler and writes nothing. A checkout (editable install) has
no such directory and builds its jar with javac instead.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from .compile import SPARK_VERSION_ATTRIBUTE, manifest
from .errors import ShimBuildError
from .locate import spark_line

# The pyspark release each line's jar is compiled against (the newest patch when this was set).
LINES = {"3.5": "3.5.9", "4.0": "4.0.5", "4.1": "4.1.4", "4.2": "4.2.0", "4.3": "4.3.0"}
INDEX = "lines.txt"
BRIDGE_ENTRY = "io/sparklock/shim/SparkLockBridge.class"


def jars_dir() -> Path:
    return Path(__file__).resolve().parent / "jars"


def jar_name(line: str) -> str:
    return f"sparklock-shim-spark{line}.jar"


def packaged_lines() -> list[str]:
    """The lines this install carries jars for (empty in a checkout)."""
    index = jars_dir() / INDEX
    if not index.is_file():
        return []
    return [x.strip() for x in index.read_text().split() if x.strip()]


def packaged_jar(version: str) -> Path | None:
    """The packaged jar for Spark ``version``, checked; None when this install has none for its
    line (a checkout, or a Spark newer than the wheel)."""
    line = spark_line(version)
    if line not in packaged_lines():
        return None
    jar = jars_dir() / jar_name(line)
    check(jar, version)
    return jar


def check(jar: Path, version: str) -> None:
    """A readable shim jar built for ``version``'s line, or one clear line saying what is wrong."""
    line = spark_line(version)
    fix = "reinstall sparklock (pip install --force-reinstall sparklock)"
    if not jar.is_file():
        raise ShimBuildError(
            f"Spark {version}: the sparklock jar for Spark {line} is missing (looked for {jar}); "
            + fix
        )
    try:
        with zipfile.ZipFile(jar) as z:
            damaged = z.testzip()
            names = set(z.namelist())
        built = manifest(jar).get(SPARK_VERSION_ATTRIBUTE, "")
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise ShimBuildError(
            f"Spark {version}: the sparklock jar {jar} is unreadable ({e}); {fix}"
        ) from e
    if damaged or BRIDGE_ENTRY not in names:
        what = f"entry {damaged} is damaged" if damaged else f"{BRIDGE_ENTRY} is missing"
        raise ShimBuildError(f"Spark {version}: the sparklock jar {jar} is corrupt ({what}); {fix}")
    if spark_line(built) != line:
        raise ShimBuildError(
            f"Spark {version}: the sparklock jar {jar} was built for Spark {built or '(unknown)'}"
            f", not {line}.x; {fix}"
        )
