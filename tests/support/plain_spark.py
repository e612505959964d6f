"""What Spark alone prints: a plain local Spark session (no sparklock) in a separate process.

A test that must show sparklock leaves Spark's output unchanged compares against this: the same
local settings as ``tests.support.spark.build_session`` but without ``sparklock.configure``, so
no extension, plugin or listener of ours is in the JVM at all (one SparkContext per process,
hence the process). ``run(setup, statements)`` runs ``setup`` and then each of ``statements``,
returning the first column of every row of each statement's result, joined by newlines.

    python3 -m tests.support.plain_spark < request.json > answer.json
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def run(setup: Sequence[str], statements: Sequence[str], warehouse: Path | str) -> list[str]:
    """Each statement's output as Spark without sparklock prints it (after ``setup``)."""
    request = {"setup": list(setup), "statements": list(statements), "warehouse": str(warehouse)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.support.plain_spark"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"plain Spark failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _main() -> None:
    from pyspark.sql import SparkSession

    request = json.loads(sys.stdin.read())
    session = (
        SparkSession.builder.master("local[2]")
        .appName("plain-spark")
        .config("spark.sql.warehouse.dir", request["warehouse"])
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        for statement in request["setup"]:
            session.sql(statement).collect()
        out = []
        for statement in request["statements"]:
            rows = session.sql(statement).collect()
            out.append("\n".join(str(r[0]) for r in rows))
    finally:
        session.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    _main()
