"""``examples/pipelines.py``, briefly: with locks on, no failure and no bad read.

The example starts its own local ZooKeeper and three Spark drivers over one shared table and
runs its pipelines unlocked and then locked. What the unlocked run hits depends on timing, so the
test runs the locked one only (``--only on``), which must be clean.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper, pytest.mark.load]
REPO = Path(__file__).resolve().parents[1]
SECONDS = os.environ.get("SPARKLOCK_PIPELINES_SECONDS", "8")


def load_example():
    spec = importlib.util.spec_from_file_location("pipelines", REPO / "examples" / "pipelines.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_invariant_check_and_error_classes_are_not_vacuous():
    """What the runs count: short, empty, missing and mixed hours; Spark's error class inside a
    failed job's Java trace, sparklock's codes, else the Java exception's name."""
    pipelines = load_example()
    hours = ["00", "01", "02", "03"]
    rows = [("00", 10, 1), ("01", 4, 1), ("02", 10, 2), ("03", 0, 0)]
    assert pipelines.bad_hours(rows, hours, 10) == (["01", "03"], ["02"])
    assert pipelines.bad_hours(rows[:1], ["00", "09"], 10) == (["09"], [])
    assert pipelines.bad_hours([("00", 12, 1)], ["00"], 10) == ([], ["00"])
    assert pipelines.bad_hours([("00", 10, 1)], ["00"], 10) == ([], [])
    trace = (
        "An error occurred while calling o93.collectToPython.\n: org.apache.spark.SparkException: "
        "Job aborted due to stage failure: ... [FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error"
    )
    assert pipelines.error_class(Exception(trace)) == "FAILED_READ_FILE.FILE_NOT_EXIST"
    assert pipelines.error_class(Exception("LOCK_CONFLICT: could not acquire")) == "LOCK_CONFLICT"
    java = "An error occurred while calling o48.sql.\n: java.io.FileNotFoundException: File x"
    assert pipelines.error_class(Exception(java)) == "FileNotFoundException"


def test_locked_run_has_no_failure_and_no_bad_read(tmp_path):
    out = tmp_path / "runs.json"
    cmd = [sys.executable, str(REPO / "examples" / "pipelines.py"), "--seconds", SECONDS]
    cmd += ["--warmup", "0", "--hours", "3", "--rows", "1000", "--files", "3", "--json", str(out)]
    cmd += ["--only", "on"]  # the unlocked run's figures depend on timing: nothing to assert
    done = subprocess.run(
        cmd,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stderr[-3000:]
    [on] = json.loads(out.read_text())
    assert on["enabled"] == "true"
    roles = on["roles"]
    assert set(roles) == {"loader", "compactor", "reporter"}
    assert {role: r["failed"] for role, r in roles.items()} == {role: {} for role in roles}
    assert sum(r["missing_rows"] + r["mixed_writes"] for r in roles.values()) == 0, roles
    assert on["wrong"] == []
    # it really ran, under locks: every role ran statements and got locks, the report was read
    assert all(r["statements"] > 0 and r["lock_waits"] > 0 for r in roles.values()), roles
    assert sum(r["lock_wait_s"] for r in roles.values()) > 0  # grants report their wait
    assert roles["reporter"]["reads_checked"] > 0
    assert "locks ON" in done.stdout and "failed by error class: none" in done.stdout
