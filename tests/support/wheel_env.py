"""sparklock as a user installs it: a wheel built from this checkout, installed (not editable)
into a virtual environment of its own beside one pyspark, run by a Java runtime with no javac.

Everything is cached under ``~/.cache/sparklock`` so a second run builds and downloads nothing:
the wheel by a hash of the files it is built from (``wheels/<hash>``), the venv per pyspark
version (``wheel-venvs/pyspark-X``, pyspark from pip's cache; the wheel reinstalled when it
changes), the runtime ``jlink``'d once (``jre-<java version>``), and a PATH of symlinks to
``/usr/bin`` without ``javac`` (``bin-nojavac``; ``/usr/bin/javac`` exists on this machine).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sparklock"
# What the wheel is built from (MANIFEST.in and setup.py say the same).
WHEEL_INPUTS = ("setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in", "LICENSE")
WHEEL_INPUTS += ("DESCRIPTION.md",)
WHEEL_TREES = ("sparklock", "jvm-shim/src")
# Modules a Java runtime does not need: the compiler and the JDK's tools.
JDK_ONLY = {"jdk.compiler", "jdk.javadoc", "jdk.jshell", "jdk.jdeps", "jdk.internal.opt"}
JDK_ONLY |= {"jdk.jpackage", "jdk.jlink", "jdk.jartool"}


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # another run (or the other pyspark line) may be here
        yield


def _run(cmd: list, **kw) -> None:
    print("+", " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def _wheel_files() -> list[Path]:
    files = [REPO / name for name in WHEEL_INPUTS]
    for tree in WHEEL_TREES:
        files += sorted(
            p for p in (REPO / tree).rglob("*") if p.is_file() and "__pycache__" not in p.parts
        )
    return files


def wheel() -> Path:
    """The wheel of this checkout, built (from a clean copy of its inputs) once per content."""
    h = hashlib.sha256()
    files = _wheel_files()
    for f in files:
        h.update(str(f.relative_to(REPO)).encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(os.environ.get("SPARKLOCK_SHIM_LINES", "").encode())  # a wheel of fewer lines
    out = CACHE / "wheels" / h.hexdigest()[:16]
    with _locked(CACHE / "wheels" / ".lock"):
        found = sorted(out.glob("sparklock-*.whl"))
        if found:
            return found[0]
        with tempfile.TemporaryDirectory(prefix="sparklock-wheel-") as tmp:
            src = Path(tmp) / "src"
            for f in files:
                (src / f.relative_to(REPO)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, src / f.relative_to(REPO))
            pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps"]
            _run([*pip, "--disable-pip-version-check", "-w", Path(tmp) / "dist", src])
            out.mkdir(parents=True, exist_ok=True)
            (built,) = (Path(tmp) / "dist").glob("sparklock-*.whl")
            shutil.copy2(built, out / built.name)
        return out / built.name


def venv_root(pyspark_version: str) -> Path:
    return CACHE / "wheel-venvs" / f"pyspark-{pyspark_version}"


def venv(pyspark_version: str, whl: Path) -> Path:
    """A venv with pyspark ``pyspark_version`` and ``whl`` installed as a user would (no -e)."""
    root = venv_root(pyspark_version)
    python = root / "bin" / "python"
    with _locked(CACHE / "wheel-venvs" / f".pyspark-{pyspark_version}.lock"):
        stamp = root / ".sparklock-wheel"
        if not python.exists():
            _run([sys.executable, "-m", "venv", root])
            pin = f"pyspark=={pyspark_version}"
            _run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", pin])
        if not stamp.exists() or stamp.read_text() != str(whl):
            # Its dependencies (kazoo, ...) resolve beside the pinned pyspark, which stays.
            pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            _run([*pip, "--force-reinstall", "--no-deps", whl])
            _run([*pip, whl, f"pyspark=={pyspark_version}"])
            stamp.write_text(str(whl))
    return root


def bare_venv() -> Path:
    """A venv with nothing installed: an executor's Python that has no sparklock (nor pyspark:
    executors take pyspark from the worker's Spark)."""
    root = CACHE / "wheel-venvs" / "bare"
    with _locked(CACHE / "wheel-venvs" / ".bare.lock"):
        if not (root / "bin" / "python").exists():
            _run([sys.executable, "-m", "venv", "--without-pip", root])
    return root


def java_runtime() -> Path:
    """A Java runtime without a compiler, jlink'd from the JDK that runs ``java``."""
    props = subprocess.run(
        ["java", "-XshowSettings:properties", "-version"], capture_output=True, text=True
    ).stderr
    fields = dict(
        line.strip().split(" = ", 1) for line in props.splitlines() if " = " in line.strip()
    )
    home, version = Path(fields["java.home"]), fields["java.version"]
    out = CACHE / f"jre-{version}"
    with _locked(CACHE / ".jre.lock"):
        if not (out / "bin" / "java").exists():
            listed = subprocess.run(
                [home / "bin" / "java", "--list-modules"], capture_output=True, text=True
            ).stdout
            modules = [m.split("@")[0] for m in listed.split() if m.split("@")[0] not in JDK_ONLY]
            shutil.rmtree(out, ignore_errors=True)
            _run([home / "bin" / "jlink", "--add-modules", ",".join(modules), "--output", out])
    assert not (out / "bin" / "javac").exists()
    return out


def path_without_javac() -> Path:
    """A directory of symlinks to /usr/bin's programs, less javac (and java: the runtime's)."""
    out = CACHE / "bin-nojavac"
    with _locked(CACHE / ".bin-nojavac.lock"):
        if not out.is_dir():
            tmp = Path(tempfile.mkdtemp(dir=CACHE, prefix="bin-"))
            for entry in Path("/usr/bin").iterdir():
                if entry.name not in {"javac", "java"}:
                    (tmp / entry.name).symlink_to(entry)
            os.replace(tmp, out)
    return out


def user_env(venv_root: Path, jre: Path, home: Path) -> dict[str, str]:
    """The environment of a user's shell: the venv and the runtime first, no javac, nothing of
    this checkout (no PYTHONPATH, no SPARK_HOME), its own cache directory (to see what it wrote)."""
    keep = {k: os.environ[k] for k in ("LANG", "LC_ALL", "TZ", "TMPDIR") if k in os.environ}
    path = os.pathsep.join(map(str, (jre / "bin", venv_root / "bin", path_without_javac())))
    return {
        **keep,
        "HOME": str(Path.home()),
        "PATH": path,
        "JAVA_HOME": str(jre),
        "XDG_CACHE_HOME": str(home / "xdg-cache"),
        "PYSPARK_PYTHON": str(venv_root / "bin" / "python"),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


if __name__ == "__main__":  # python3 -m tests.support.wheel_env 4.0 4.1: venvs for those lines
    from sparklock.shim.prebuilt import LINES

    for line in sys.argv[1:]:
        print(venv(LINES[line], wheel()))
