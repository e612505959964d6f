"""Startup: from ``getOrCreate()`` to the first locked statement's result, in fresh processes.

    python3 -m tests.benchmarks.bench_startup [--quick]

Each process is a user's first program on a fresh install: the wheel built from this checkout in
its own venv (``tests/support/wheel_env.py``, a Java runtime without javac, an empty sparklock
cache), ``sparklock.configure(builder)`` then ``getOrCreate()`` then ``CREATE TABLE`` (the first
statement that locks). The two modes differ only in ``spark.sparklock.enabled`` (``true`` /
``false``: the jar, the extension and the plugin are installed in both) and alternate, so a
machine's drift hits both; 5 processes each (``--quick``: 2), medians and their ratio printed.
``configure`` is timed apart: it is where a jar used to be compiled (~9 s of javac on the first
run before the wheel carried jars).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pyspark

from tests.benchmarks.common import bench_main, median, note, print_table
from tests.support import wheel_env

PROGRAM = """
import json, sys, time
t0 = time.perf_counter()
from pyspark.sql import SparkSession
import sparklock
b = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
b = sparklock.configure(b.config("spark.sparklock.enabled", sys.argv[1]))
t1 = time.perf_counter()
spark = b.getOrCreate()
t2 = time.perf_counter()
spark.sql("CREATE TABLE t (a INT) USING parquet")
t3 = time.perf_counter()
print("TIMES " + json.dumps({"configure": t1 - t0, "session": t2 - t1, "first": t3 - t1}))
"""


def one(venv: Path, enabled: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="sparklock-startup-") as tmp:
        env = wheel_env.user_env(venv, wheel_env.java_runtime(), Path(tmp))
        proc = subprocess.run(
            [str(venv / "bin" / "python"), "-c", PROGRAM, enabled],
            env=env,
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
    line = next(x for x in proc.stdout.splitlines() if x.startswith("TIMES "))
    return json.loads(line[len("TIMES ") :])


def run(quick: bool) -> None:
    venv = wheel_env.venv(pyspark.__version__, wheel_env.wheel())
    rounds = 2 if quick else 5
    times: dict[str, list[dict]] = {"true": [], "false": []}
    for i in range(rounds):
        for enabled in ("true", "false") if i % 2 == 0 else ("false", "true"):
            times[enabled].append(one(venv, enabled))
    rows = []
    for enabled, label in (("true", "sparklock enabled"), ("false", "enabled=false")):
        keys = ("configure", "session", "first")
        rows.append([label, *(f"{median([t[k] for t in times[enabled]]):.2f}" for k in keys)])
    print_table(
        f"Startup, pyspark {pyspark.__version__}, wheel install, median of {rounds} processes (s)",
        ["mode", "configure()", "getOrCreate()", "getOrCreate() -> first locked result"],
        rows,
    )
    ratio = float(rows[0][3]) / float(rows[1][3])
    note(f"\nratio enabled / enabled=false (to the first locked result): {ratio:.2f}")


if __name__ == "__main__":
    bench_main(run, __doc__)
