"""Compile the shim's Java sources with ``javac`` against one Spark's jars into a jar.

No Maven, no Scala compiler: the sources compile against ``<spark jars>/*``. Version
differences (Spark 3.5 .. 4.3) live in ``jvm-shim/src/compat/<aspect>/<since>/``: for each aspect
the build adds the variant named by the newest version not above the target (Spark's version, or
Scala's for the ``scala`` aspect); see jvm-shim/BRIDGE.md "Spark versions". Used at packaging
time for every supported line (``sparklock.shim.package``) and at run time only as the fallback
for a Spark no packaged jar fits.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from .errors import ShimBuildError
from .locate import version_tuple

JAR_NAME = "sparklock-shim.jar"
JAVA_RELEASE = "17"
SPARK_VERSION_ATTRIBUTE = "Sparklock-Spark-Version"
SOURCE_HASH_ATTRIBUTE = "Sparklock-Source-Hash"
# Aspects whose variants are chosen by the Scala version rather than Spark's.
SCALA_ASPECTS = frozenset({"scala"})


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent.parent


def sources_root() -> Path:
    """The Java sources: packaged beside this module in a wheel, ``jvm-shim/src`` in a checkout."""
    packaged = Path(__file__).resolve().parent / "src"
    return packaged if packaged.is_dir() else repo_root() / "jvm-shim" / "src"


def source_dir() -> Path:
    return sources_root() / "main" / "java"


def compat_root() -> Path:
    return sources_root() / "compat"


def compat_dirs(spark: str, scala: str) -> list[Path]:
    """The version-specific source dirs to compile for this Spark: per aspect, the variant named
    by the newest version <= the target one. An aspect with no such variant is an error (the
    Spark is older than any this shim supports)."""
    root = compat_root()
    if not root.is_dir():
        return []
    chosen = []
    for aspect in sorted(d for d in root.iterdir() if d.is_dir()):
        have = version_tuple(scala if aspect.name in SCALA_ASPECTS else spark)
        variants = [
            (version_tuple(v.name), v)
            for v in aspect.iterdir()
            if v.is_dir() and v.name[0].isdigit()
        ]
        fitting = [(ver, v) for ver, v in variants if ver <= have]
        if not fitting:
            names = ", ".join(sorted(v.name for _, v in variants))
            raise ShimBuildError(
                f"pyspark {spark} is older than every variant of compat/{aspect.name} "
                f"({names}): sparklock supports pyspark 3.5.0 and later"
            )
        chosen.append(max(fitting)[1])
    return chosen


def sources(spark: str, scala: str) -> list[Path]:
    """The main sources plus the compat variants for this Spark."""
    src = source_dir()
    files = sorted(src.rglob("*.java")) if src.is_dir() else []
    if not files:
        raise ShimBuildError(
            f"no Java sources under {src}: this sparklock install carries neither a jar for "
            "this Spark nor the sources to build one; reinstall sparklock from its wheel"
        )
    for variant in compat_dirs(spark, scala):
        files.extend(sorted(variant.rglob("*.java")))
    return files


def source_hash(spark: str, scala: str) -> str:
    """Hash of the sources compiled for this Spark (and the Java release they target)."""
    h = hashlib.sha256()
    root = sources_root()
    for f in sources(spark, scala):
        h.update(str(f.relative_to(root)).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    h.update(JAVA_RELEASE.encode())
    return h.hexdigest()[:16]


def find_javac() -> str | None:
    """javac from JAVA_HOME, else PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "javac"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("javac")


def build(javac: str, jars: Path, spark: str, scala: str, target: Path) -> None:
    """Compile the sources for ``spark`` against ``jars/*`` into ``target`` (atomically)."""
    attributes = {SPARK_VERSION_ATTRIBUTE: spark, SOURCE_HASH_ATTRIBUTE: source_hash(spark, scala)}
    javac_jar(javac, sources(spark, scala), [str(jars / "*")], target, attributes)


def javac_jar(
    javac: str, files: list[Path], classpath: list[str], target: Path, attributes: dict[str, str]
) -> None:
    """``files`` compiled against ``classpath`` into the jar ``target`` (written atomically:
    readers never see a half-written jar) whose manifest carries ``attributes``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="classes-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        args_file = Path(tmp) / "sources.txt"
        args_file.write_text("\n".join(f'"{s}"' for s in files))
        cmd = [javac, "-nowarn", "-encoding", "UTF-8", "--release", JAVA_RELEASE]
        cmd += ["-cp", os.pathsep.join(classpath), "-d", str(classes), f"@{args_file}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0:
            raise ShimBuildError(
                f"javac failed (exit {proc.returncode}) compiling {files[0].parent} for "
                f"{target.name}:\n" + (proc.stderr or proc.stdout)[-6000:]
            )
        partial = Path(tmp) / target.name
        lines = "".join(f"{k}: {v}\n" for k, v in attributes.items())
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr(
                "META-INF/MANIFEST.MF",
                f"Manifest-Version: 1.0\nCreated-By: sparklock\n{lines}",
            )
            for f in sorted(classes.rglob("*.class")):
                jar.write(f, f.relative_to(classes).as_posix())
        os.replace(partial, target)


def manifest(jar: Path) -> dict[str, str]:
    """A shim jar's manifest attributes; raises ``OSError``/``BadZipFile``/``KeyError``."""
    with zipfile.ZipFile(jar) as z:
        text = z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def built_for(jar: Path) -> str | None:
    """The Spark version a shim jar was built against (its manifest), None when it does not say."""
    try:
        return manifest(jar).get(SPARK_VERSION_ATTRIBUTE)
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
