"""Build the JVM shim jar (``jvm-shim/src/main/java``) with ``javac`` against pyspark's jars.

No Maven, no Scala compiler: the Java sources compile against ``<pyspark>/jars/*`` into a cache
directory ``spark-<pyspark version>-<hash>`` (the hash covers the sources, the pyspark version and
the javac version), so a fresh checkout builds once (a few seconds) and every later session reuses
the jar, and a jar built for one Spark is never picked for another. A file lock keeps two
processes from building at the same time.

Version differences (pyspark 3.5 .. 4.3) live in ``jvm-shim/src/compat/<aspect>/<since>/``: for
each aspect the build adds the variant named by the newest version not above the installed one
(Spark's version, or Scala's for the ``scala`` aspect); see jvm-shim/BRIDGE.md "Spark versions".

``SPARKLOCK_SHIM_JAR=/path/to.jar`` uses a prebuilt jar instead; ``SPARKLOCK_SHIM_CACHE=<dir>``
moves the cache (default ``<repo>/jvm-shim/build``). ``python -m sparklock.spark.shim`` builds and
prints the jar path.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..errors import SparkLockError

EXTENSION_CLASS = "io.sparklock.shim.SparkLockExtensions"
BRIDGE_CLASS = "io.sparklock.shim.SparkLockBridge"
PLUGIN_CLASS = "io.sparklock.shim.SparkLockPlugin"
JAR_NAME = "sparklock-shim.jar"
JAVA_RELEASE = "17"
SPARK_VERSION_ATTRIBUTE = "Sparklock-Spark-Version"
# Aspects whose variants are chosen by the Scala version rather than Spark's.
SCALA_ASPECTS = frozenset({"scala"})


class ShimBuildError(SparkLockError):
    """The shim jar cannot be built or found."""

    code = "SHIM_BUILD_FAILED"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.code}: {detail}")


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def source_dir() -> Path:
    return repo_root() / "jvm-shim" / "src" / "main" / "java"


def compat_root() -> Path:
    return repo_root() / "jvm-shim" / "src" / "compat"


def spark_version() -> str:
    """The installed pyspark's version (the Spark the shim compiles against and runs in)."""
    import pyspark

    return pyspark.__version__


def _version_tuple(text: str) -> tuple[int, ...]:
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


def scala_version() -> str:
    """Scala's binary version of the pyspark jars (``2.12`` / ``2.13``), from scala-library."""
    for jar in sorted(pyspark_jars_dir().glob("scala-library-*.jar")):
        full = jar.name[len("scala-library-") : -len(".jar")]
        return ".".join(full.split(".")[:2])
    raise ShimBuildError(f"no scala-library jar in {pyspark_jars_dir()}")


def compat_dirs(spark: str | None = None, scala: str | None = None) -> list[Path]:
    """The version-specific source dirs to compile for this Spark: per aspect, the variant named
    by the newest version <= the installed one. An aspect with no such variant is an error (the
    Spark is older than any this shim supports)."""
    root = compat_root()
    if not root.is_dir():
        return []
    chosen = []
    for aspect in sorted(d for d in root.iterdir() if d.is_dir()):
        if aspect.name in SCALA_ASPECTS:
            have = _version_tuple(scala or scala_version())
        else:
            have = _version_tuple(spark or spark_version())
        variants = [
            (_version_tuple(v.name), v)
            for v in aspect.iterdir()
            if v.is_dir() and v.name[0].isdigit()
        ]
        fitting = [(ver, v) for ver, v in variants if ver <= have]
        if not fitting:
            names = ", ".join(sorted(v.name for _, v in variants))
            raise ShimBuildError(
                f"pyspark {spark or spark_version()} is older than every variant of "
                f"{aspect.relative_to(repo_root())} ({names}): "
                "sparklock supports pyspark 3.5.0 and later"
            )
        chosen.append(max(fitting)[1])
    return chosen


def cache_root() -> Path:
    env = os.environ.get("SPARKLOCK_SHIM_CACHE")
    return Path(env) if env else repo_root() / "jvm-shim" / "build"


def pyspark_jars_dir() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not jars.is_dir():
        raise ShimBuildError(f"pyspark has no jars directory at {jars}")
    return jars


def find_javac() -> str:
    """javac from JAVA_HOME, else PATH; a clear error when there is none."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "javac"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("javac")
    if found:
        return found
    raise ShimBuildError(
        "javac was not found (looked in $JAVA_HOME/bin and on PATH). sparklock compiles its "
        "small Spark extension on first use and needs a JDK 17+ (not only a JRE): install one "
        "(e.g. apt-get install openjdk-17-jdk-headless) and set JAVA_HOME, or point "
        "SPARKLOCK_SHIM_JAR at a prebuilt sparklock-shim.jar"
    )


def _sources() -> list[Path]:
    """The main sources plus this Spark's compat variants (jvm-shim/src/compat)."""
    src = source_dir()
    files = sorted(src.rglob("*.java")) if src.is_dir() else []
    if files:
        for variant in compat_dirs():
            files.extend(sorted(variant.rglob("*.java")))
    if not files:
        raise ShimBuildError(
            f"no Java sources under {src}: sparklock must be installed from its source tree "
            "(pip install -e .) to build its Spark extension, or SPARKLOCK_SHIM_JAR must name "
            "a prebuilt jar"
        )
    return files


def _javac_identity(javac: str) -> str:
    """Which compiler (without starting a JVM): its real path, size and mtime."""
    real = os.path.realpath(javac)
    st = os.stat(real)
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


def build_key(javac: str) -> str:
    """Hash of the sources, the pyspark version and the compiler."""
    import pyspark

    h = hashlib.sha256()
    src = repo_root() / "jvm-shim" / "src"
    for f in _sources():
        h.update(str(f.relative_to(src)).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    h.update(pyspark.__version__.encode())
    h.update(_javac_identity(javac).encode())
    h.update(JAVA_RELEASE.encode())
    return h.hexdigest()[:16]


def jar_path() -> Path:
    """The jar to put on ``spark.jars``: built (or reused) on demand."""
    prebuilt = os.environ.get("SPARKLOCK_SHIM_JAR")
    if prebuilt:
        path = Path(prebuilt)
        if not path.is_file():
            raise ShimBuildError(f"SPARKLOCK_SHIM_JAR={prebuilt} does not exist")
        _check_built_for_this_spark(path)
        return path.resolve()
    javac = find_javac()
    key = build_key(javac)
    root = cache_root()
    target = root / f"spark-{spark_version()}-{key}" / JAR_NAME
    if target.is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same key
        try:
            if not target.is_file():
                _build(javac, target)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target


def _build(javac: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    sources = _sources()
    classpath = str(pyspark_jars_dir() / "*")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="classes-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        args_file = Path(tmp) / "sources.txt"
        args_file.write_text("\n".join(f'"{s}"' for s in sources))
        cmd = [
            javac,
            "-nowarn",
            "-encoding",
            "UTF-8",
            "--release",
            JAVA_RELEASE,
            "-cp",
            classpath,
            "-d",
            str(classes),
            f"@{args_file}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode != 0:
            raise ShimBuildError(
                f"javac failed (exit {proc.returncode}) compiling {source_dir()}:\n"
                + (proc.stderr or proc.stdout)[-6000:]
            )
        partial = Path(tmp) / JAR_NAME
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr(
                "META-INF/MANIFEST.MF",
                "Manifest-Version: 1.0\nCreated-By: sparklock\n"
                f"{SPARK_VERSION_ATTRIBUTE}: {spark_version()}\n",
            )
            for f in sorted(classes.rglob("*.class")):
                jar.write(f, f.relative_to(classes).as_posix())
        os.replace(partial, target)  # atomic: readers never see a half-written jar


def built_for(jar: Path) -> str | None:
    """The Spark version a shim jar was built against (its manifest), None when it does not say."""
    try:
        with zipfile.ZipFile(jar) as z:
            manifest = z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    for line in manifest.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == SPARK_VERSION_ATTRIBUTE:
            return value.strip()
    return None


def _check_built_for_this_spark(jar: Path) -> None:
    """A prebuilt jar must have been built for the installed Spark: its classes override Spark
    methods whose signatures differ between versions, so another Spark fails at run time."""
    built = built_for(jar)
    if built != spark_version():
        raise ShimBuildError(
            f"SPARKLOCK_SHIM_JAR={jar} was built for Spark {built or '(unknown)'}, but pyspark "
            f"{spark_version()} is installed: build it against this pyspark "
            "(python -m sparklock.spark.shim) or unset SPARKLOCK_SHIM_JAR"
        )


def main(argv: list[str] | None = None) -> int:
    try:
        print(jar_path())
    except ShimBuildError as e:
        print(str(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
