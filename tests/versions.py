"""Run the test suite against another pyspark, in a virtual environment of its own.

    python3 tests/versions.py 3.5.9                 # the Spark-facing tests on pyspark 3.5.9
    python3 tests/versions.py 3.5 -- -q -x tests/test_sql_statements.py
    python3 tests/versions.py 4.3.0 --all           # the whole suite

``VERSION`` is an exact pyspark version (``3.5.9``) or a line (``3.5``: the newest 3.5.x). The
environment is ``$SPARKLOCK_VENVS/pyspark-VERSION`` (default ``~/.cache/sparklock/venvs``),
created on first use with ``pyspark`` installed first and then this checkout
(``pip install -e '.[dev]'``) under a constraint that keeps that pyspark: pip fails rather than
change the Spark under test. Later runs reuse it (it is reinstalled when pyproject.toml or
setup.cfg changes).

Without ``--all`` only the tests that start a JVM from the pyspark jars run (markers ``spark``,
``zookeeper``, ``hive_interop``, ``iceberg``); the rest is pure Python and does not depend on the
Spark version, and the faults, soaks and loads (``nemesis``, ``soak``, ``load``, ``dbt``) prove
nothing per Spark line that the functional tests do not. The tests run in
``SPARKLOCK_TEST_WORKERS`` processes (default 2; ``0`` for one; pytest-xdist, a module per
process), unless ``-n`` is given after ``--``. Arguments after ``--`` go to pytest (their test
paths replace the default ``tests``; a ``-m`` there replaces the marker selection:
``python3 tests/versions.py 4.2.0 -- -q -m delta``).

The ``delta`` extra (delta-spark) is installed too where Delta has a release built for that
Spark line (``DELTA_FOR_SPARK_LINE``: 3.3.x for 3.5, 4.4.x for 4.2); where none is (pyspark
4.3), the environment has no delta-spark and the Delta tests skip saying so. The outcome is
remembered in ``.sparklock-delta`` beside the setup stamp.
Apache Iceberg needs no extra: its Spark runtime jar is resolved by Spark itself
(``sparklock.spark.iceberg``) where Iceberg builds one (Spark 3.5, 4.0, 4.1); elsewhere the Iceberg
tests skip saying so (``python3 tests/versions.py 4.1 -- -q -m iceberg``).
The shim jar builds per Spark version (``~/.cache/sparklock/shim/spark-<version>-<hash>``), so runs
against several versions share one checkout.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPARK_FACING = (
    "(spark or zookeeper or hive_interop or iceberg) and not (nemesis or soak or load or dbt)"
)
#: Test processes side by side (pytest-xdist, one module per process: a module shares one
#: Spark session). Most of the suite waits -- lock budgets, pauses, expiries, JVM start-ups --
#: so two processes on two cores finish in a little over half the time.
WORKERS = os.environ.get("SPARKLOCK_TEST_WORKERS", "2")
#: delta-spark releases whose jars Maven Central (as this machine kind reaches it) does not have:
#: ``configure_spark_with_delta_pip`` asks Spark for the jar of the installed release, so the
#: Delta tests run on the newest release whose jar resolves (4.4.0 for Spark 4.2)
DELTA_UNRESOLVABLE = ("4.4.1",)
#: The delta-spark releases built for each Spark line the Delta tests run on (Delta's
#: compatibility table; delta-spark's own pins are looser: 4.1.0 accepts any pyspark >= 4.0.1).
#: A line not here has no Delta release: no delta-spark is installed and the Delta tests skip.
DELTA_FOR_SPARK_LINE = {"3.5": "delta-spark>=3.3,<3.4", "4.2": "delta-spark>=4.4,<4.5"}


def venv_root() -> Path:
    env = os.environ.get("SPARKLOCK_VENVS")
    return Path(env) if env else Path.home() / ".cache" / "sparklock" / "venvs"


def requirement(version: str) -> str:
    """``3.5`` -> the newest 3.5.x; ``3.5.9`` -> exactly that."""
    parts = version.split(".")
    if len(parts) == 2:
        major, minor = int(parts[0]), int(parts[1])
        return f"pyspark>={major}.{minor},<{major}.{minor + 1}"
    return f"pyspark=={version}"


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _installed_pyspark(venv: Path) -> str | None:
    proc = subprocess.run(
        [str(_python(venv)), "-c", "import pyspark; print(pyspark.__version__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def _setup_stamp() -> str:
    """What the project install depends on: setup.cfg and pyproject.toml."""
    h = hashlib.sha256()
    for name in ("setup.cfg", "pyproject.toml"):
        h.update((REPO / name).read_bytes())
    return h.hexdigest()[:16]


def _pip(venv: Path, *args: str) -> None:
    cmd = [str(_python(venv)), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def ensure_venv(version: str) -> tuple[Path, str]:
    """The venv for ``version`` with pyspark and this checkout installed; (venv, pyspark)."""
    venv = venv_root() / f"pyspark-{version}"
    if not _python(venv).exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    spark = _installed_pyspark(venv)
    if spark is None:
        _pip(venv, requirement(version))
        spark = _installed_pyspark(venv)
        if spark is None:
            raise SystemExit(f"pyspark did not install into {venv}")
    stamp_file = venv / ".sparklock-setup"
    stamp = f"{_setup_stamp()} {spark}"
    if not stamp_file.exists() or stamp_file.read_text().strip() != stamp:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as c:
            c.write(f"pyspark=={spark}\n")  # the Spark under test stays as it is
        try:
            _pip(venv, "-c", c.name, "-e", f"{REPO}[dev]")
        finally:
            os.unlink(c.name)
        if _installed_pyspark(venv) != spark:  # pragma: no cover - the constraint forbids it
            raise SystemExit(f"installing sparklock changed pyspark {spark} in {venv}")
        stamp_file.write_text(stamp + "\n")
    _ensure_delta(venv, spark)
    return venv, spark


def _ensure_delta(venv: Path, spark: str) -> None:
    """Install the ``delta`` extra if some delta-spark release accepts this pyspark; tried once
    per setup stamp (the constraint keeps pyspark: pip fails rather than change it)."""
    marker = venv / ".sparklock-delta"
    wanted = DELTA_FOR_SPARK_LINE.get(".".join(spark.split(".")[:2]))
    stamp = f"{_setup_stamp()} {spark} {wanted}"
    if marker.exists() and marker.read_text().split("\n", 1)[0] == stamp:
        return
    if wanted is None:
        pip = [str(_python(venv)), "-m", "pip", "uninstall", "-q", "-y", "delta-spark"]
        subprocess.run(pip, capture_output=True, check=False)  # from an earlier, looser rule
        outcome = f"no Delta release is built for Spark {spark}"
        print(f"+ {outcome}", flush=True)
        marker.write_text(f"{stamp}\n{outcome}\n")
        return
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as c:
        c.write(f"pyspark=={spark}\n")
        c.write(f"{wanted}\n")
        c.writelines(f"delta-spark!={v}\n" for v in DELTA_UNRESOLVABLE)
    cmd = [str(_python(venv)), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    cmd += ["-c", c.name, "-e", f"{REPO}[dev,delta]"]
    print("+", " ".join(cmd), flush=True)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    finally:
        os.unlink(c.name)
    if proc.returncode == 0:
        outcome = "delta-spark installed"
    else:
        outcome = f"no delta-spark release accepts pyspark {spark}"
    print(f"+ {outcome}", flush=True)
    marker.write_text(f"{stamp}\n{outcome}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="arguments after -- go to pytest"
    )
    parser.add_argument("version", help="pyspark version (3.5.9) or line (3.5)")
    parser.add_argument("--all", action="store_true", help="run the whole suite")
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    venv, spark = ensure_venv(args.version)
    cmd = [str(_python(venv)), "-m", "pytest"]
    if not args.all and "-m" not in extra:
        cmd += ["-m", SPARK_FACING]
    if "-n" not in extra and WORKERS not in ("", "0", "1"):
        cmd += ["-n", WORKERS, "--dist", "loadfile"]
    cmd += extra or ["-q"]
    print(f"+ pyspark {spark} in {venv}: {' '.join(cmd[1:])}", flush=True)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(cmd, cwd=REPO, env=env, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
