"""Build the per-line shim jars a wheel carries (run by setup.py's build step, or by hand).

    python -m sparklock.shim.package OUT_DIR [--lines 3.5,4.3]

For each supported Spark line (``prebuilt.LINES``) the sources compile with ``javac`` against
that line's pyspark jars; the Delta part (``delta_jar``) once, beside them. Those come from
the pyspark distribution itself (``pip wheel --no-deps pyspark==X``, which reuses pip's cache),
unpacked once to ``~/.cache/sparklock/spark-jars/pyspark-X``; a built jar is cached as the
run-time fallback caches it (``~/.cache/sparklock/shim/spark-X-<source hash>``), so a second
build downloads and compiles nothing. ``SPARKLOCK_SHIM_LINES=3.5,4.3`` limits the lines (a
smaller wheel, for tests). Needs a JDK 17+ and pip; the network only the first time.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from . import delta_jar
from .compile import JAR_NAME, build, find_javac, source_hash
from .errors import ShimBuildError
from .locate import scala_version, user_cache
from .prebuilt import INDEX, LINES, jar_name

JARS_PREFIX = "pyspark/jars/"


def _outside_build_isolation() -> dict[str, str]:
    """This environment without what pip's isolated build sets to hide the interpreter's own
    site-packages: under ``pip wheel .`` the build step runs there, and the ``pip`` it needs to
    fetch a pyspark lives in those site-packages."""
    hidden = ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONNOUSERBASE")
    return {k: v for k, v in os.environ.items() if k not in hidden}


def compile_classpath(version: str) -> Path:
    """pyspark ``version``'s jars, unpacked once under the user cache."""
    target = user_cache() / "spark-jars" / f"pyspark-{version}"
    done = target / ".complete"
    if done.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return target
        with tempfile.TemporaryDirectory(dir=target.parent, prefix="fetch-") as tmp:
            cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps"]
            cmd += ["--disable-pip-version-check", "-w", tmp, f"pyspark=={version}"]
            print("+", " ".join(cmd), file=sys.stderr, flush=True)
            subprocess.run(cmd, check=True, env=_outside_build_isolation())
            (wheel,) = Path(tmp).glob("pyspark-*.whl")
            unpacked = Path(tmp) / "jars"
            unpacked.mkdir()
            with zipfile.ZipFile(wheel) as z:
                for name in z.namelist():
                    if name.startswith(JARS_PREFIX) and name.endswith(".jar"):
                        (unpacked / Path(name).name).write_bytes(z.read(name))
            shutil.rmtree(target, ignore_errors=True)
            os.replace(unpacked, target)
        done.touch()
    return target


def line_jar(line: str, javac: str) -> Path:
    """The shim jar for ``line``, compiled against its pinned pyspark (cached)."""
    version = LINES[line]
    jars = compile_classpath(version)
    scala = scala_version(jars)
    cached = user_cache() / "shim" / f"spark-{version}-{source_hash(version, scala)}" / JAR_NAME
    if not cached.is_file():
        print(f"compiling the shim for Spark {version}", file=sys.stderr, flush=True)
        build(javac, jars, version, scala, cached)
    return cached


def selected_lines(lines: str | None = None) -> list[str]:
    chosen = lines or os.environ.get("SPARKLOCK_SHIM_LINES") or ",".join(LINES)
    out = [x.strip() for x in chosen.split(",") if x.strip()]
    unknown = [x for x in out if x not in LINES]
    if unknown:
        raise ShimBuildError(f"unknown Spark line(s) {unknown}: supported {', '.join(LINES)}")
    return out


def build_jars(out_dir: Path, lines: str | None = None) -> list[Path]:
    """Write one jar per line and ``lines.txt`` (what the run time picks from) into ``out_dir``."""
    javac = find_javac()
    if javac is None:
        raise ShimBuildError("building sparklock's jars needs javac (a JDK 17+): set JAVA_HOME")
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = selected_lines(lines)
    written = []
    for line in chosen:
        target = out_dir / jar_name(line)
        shutil.copyfile(line_jar(line, javac), target)
        written.append(target)
    # The Delta part (one jar for every line: it uses Hadoop's Path, delta-storage's LogStore and
    # the shim's Lease, the same in each), compiled against the first line chosen.
    delta_target = out_dir / delta_jar.JAR_NAME
    first = chosen[0]
    delta_jar.build(javac, compile_classpath(LINES[first]), out_dir / jar_name(first), delta_target)
    written.append(delta_target)
    (out_dir / INDEX).write_text("\n".join(chosen) + "\n")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparklock.shim.package")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--lines", help=f"comma-separated, default all ({', '.join(LINES)})")
    args = parser.parse_args(argv)
    try:
        for jar in build_jars(args.out_dir, args.lines):
            print(jar)
    except ShimBuildError as e:
        print(str(e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
