"""The Delta Lake part of the JVM side: a ``LogStore`` that checks the lease before a commit.

Delta is optional, so its part is a jar of its own (``jvm-shim/src/delta``), compiled against
Delta's ``io.delta.storage.LogStore`` API (the ``delta-storage`` jar, stable across Delta 3.3 to
4.x), the Spark jars (Hadoop's ``Path``) and the shim jar (``Lease``). It goes on ``spark.jars``
only, never on the JVM's system class path: its classes extend Delta's, which Spark loads from
``spark.jars.packages`` into its own class loader, and a class on the system class path cannot
see those. Loaded only when Delta instantiates the store, so it is harmless where Delta is absent.

``jar_path()`` answers, in order: the wheel's prebuilt ``sparklock/shim/jars/sparklock-delta.jar``;
else one compiled with javac and cached under ``~/.cache/sparklock/shim/delta-<source hash>``,
with ``delta-storage`` downloaded once from Maven Central into ``~/.cache/sparklock/delta-storage``
(its SHA-256 pinned here).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import urllib.request
from pathlib import Path

from .compile import JAVA_RELEASE, SOURCE_HASH_ATTRIBUTE, find_javac, javac_jar, sources_root
from .errors import ShimBuildError
from .locate import user_cache

JAR_NAME = "sparklock-delta.jar"
PACKAGE = "io.sparklock.shim.delta"
#: The delta-storage release the Delta part compiles against (its LogStore API is the same in
#: every Delta release sparklock supports), and the SHA-256 of its jar on Maven Central.
DELTA_STORAGE = "3.3.2"
DELTA_STORAGE_SHA256 = "c096975a2ca97ccc9b4005aa5cce16c9ac3903139d340da6665b66ace67d7c36"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"


def source_dir() -> Path:
    return sources_root() / "delta" / "java"


def sources() -> list[Path]:
    files = sorted(source_dir().rglob("*.java"))
    if not files:
        raise ShimBuildError(f"no Java sources under {source_dir()}: reinstall sparklock")
    return files


def source_hash() -> str:
    h = hashlib.sha256()
    for f in sources():
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(f"{DELTA_STORAGE}\0{JAVA_RELEASE}".encode())
    return h.hexdigest()[:16]


def delta_storage_jar() -> Path:
    """``io.delta:delta-storage`` from Maven Central, downloaded once and checked."""
    target = user_cache() / "delta-storage" / DELTA_STORAGE / f"delta-storage-{DELTA_STORAGE}.jar"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    url = f"{MAVEN_CENTRAL}/io/delta/delta-storage/{DELTA_STORAGE}/{target.name}"
    with open(target.parent / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be fetching it
        if target.is_file():
            return target
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                data = response.read()
        except OSError as e:
            raise ShimBuildError(f"downloading {url} failed: {e}") from e
        digest = hashlib.sha256(data).hexdigest()
        if digest != DELTA_STORAGE_SHA256:
            raise ShimBuildError(f"{url} has SHA-256 {digest}, expected {DELTA_STORAGE_SHA256}")
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, target)
    return target


def build(javac: str, spark_jars: Path, shim_jar: Path, target: Path) -> None:
    """Compile the Delta part against one Spark's jars and its shim jar into ``target``."""
    classpath = [str(spark_jars / "*"), str(shim_jar), str(delta_storage_jar())]
    javac_jar(javac, sources(), classpath, target, {SOURCE_HASH_ATTRIBUTE: source_hash()})


def jar_path() -> Path:
    """The Delta part's jar: packaged, cached, or compiled now (``ShimBuildError`` when it
    cannot be: no javac, or Maven Central unreachable on the first build)."""
    from . import build_once, cache_root
    from . import jar_path as shim_jar_path
    from .locate import spark_jars_dir
    from .prebuilt import jars_dir

    packaged = jars_dir() / JAR_NAME
    if packaged.is_file():
        return packaged
    root = cache_root()
    target = root / f"delta-{source_hash()}" / JAR_NAME
    if target.is_file():
        return target
    javac = find_javac()
    if javac is None:
        raise ShimBuildError(f"no packaged {JAR_NAME} and no javac to build one (a JDK 17+)")
    return build_once(root, target, lambda: build(javac, spark_jars_dir(), shim_jar_path(), target))
