"""``examples/delta_pipelines.py``, briefly: two Delta drivers, with locks no Delta conflict and no
read failure.

The example starts its own local ZooKeeper and two Spark drivers with Delta's jars (a writer:
MERGE/UPDATE/DELETE; a maintainer: OPTIMIZE, VACUUM RETAIN 0 HOURS and pinned time-travel
reports) on one Delta table, unlocked and then locked. What the unlocked run hits depends on
timing, so its figures are printed, not asserted; the locked run must be clean.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import delta

REPO = Path(__file__).resolve().parents[1]
SECONDS = os.environ.get("SPARKLOCK_DELTA_PIPELINES_SECONDS", "10")


def load_example():
    sys.path.insert(0, str(REPO / "examples"))
    try:
        spec = importlib.util.spec_from_file_location(
            "delta_pipelines", REPO / "examples" / "delta_pipelines.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "examples"))
    return module


def test_conflicts_are_told_from_other_failures():
    """Delta's conflict exceptions by their Java class (in a Py4J trace, in pyspark's converted
    error), other failures by Spark's error class; file-gone reads recognised."""
    example = load_example()
    trace = (
        "An error occurred while calling o80.sql.\n: io.delta.exceptions.ConcurrentAppendException"
        ": [DELTA_CONCURRENT_APPEND.WITHOUT_HINT] ConcurrentAppendException: Files were added"
    )
    assert example.failure_class(Exception(trace)) == "ConcurrentAppendException"
    moved = "org.apache.spark.sql.delta.MetadataChangedException: [DELTA_METADATA_CHANGED]"
    assert example.failure_class(Exception(moved)) == "MetadataChangedException"
    assert example.is_conflict("ConcurrentDeleteReadException")
    assert example.is_conflict("ProtocolChangedException")
    assert not example.is_conflict("LOCK_CONFLICT")
    gone = "Job aborted: [FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error while reading file"
    cls = example.failure_class(Exception(gone))
    assert cls == "FAILED_READ_FILE.FILE_NOT_EXIST" and example.FILE_GONE.search(cls)
    assert not example.FILE_GONE.search("DELTA_CONCURRENT_APPEND")
    assert [example.role_of(i) for i in range(4)] == ["writer", "maintainer", "reader", "writer"]


def test_one_driver_runs_the_pinned_reports():
    """UNLOCK TABLE removes every granted lock on the table (Hive's rule): a second driver's pinned
    report would remove the first one's LOCK TABLE and let VACUUM delete the files it reads."""
    example = load_example()
    roles = [example.role_of(i) for i in range(7)]
    assert roles == [
        "writer",
        "maintainer",
        "reader",
        "writer",
        "maintainer",
        "writer",
        "maintainer",
    ]
    for drivers in range(1, 8):
        reporting = [i for i in range(drivers) if example.runs_reports(i, drivers)]
        assert reporting == ([] if drivers == 1 else [1] if drivers == 2 else [2]), drivers


@pytest.mark.delta  # the Delta line only (driver processes are costly; see test_delta_drivers)
@delta.needs_delta
def test_locked_delta_run_has_no_conflict_and_no_read_failure(tmp_path):
    delta.jars()  # Delta's jars in the test cache, resolved once
    out = tmp_path / "runs.json"
    cmd = [sys.executable, str(REPO / "examples" / "delta_pipelines.py"), "--drivers", "2"]
    cmd += ["--seconds", SECONDS, "--warmup", "0", "--accounts", "200", "--partitions", "2"]
    cmd += ["--ivy", str(delta.ivy_dir()), "--json", str(out)]
    done = subprocess.run(
        cmd,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    print(done.stdout)  # both tables: the unlocked figures are for reading, not asserting
    assert done.returncode == 0, done.stderr[-3000:]
    off, on = json.loads(out.read_text())
    assert (off["enabled"], on["enabled"]) == ("false", "true")
    assert all(r["lock_waits"] == 0 for r in off["roles"].values())  # really unlocked

    roles = on["roles"]
    assert set(roles) == {"writer-1", "maintainer-2"}
    assert {role: r["failed"] for role, r in roles.items()} == {role: {} for role in roles}
    assert sum(r["read_failures"] + r["bad_reads"] for r in roles.values()) == 0, roles
    assert sum(r["wasted_s"] for r in roles.values()) == 0
    assert on["final"]["good"], on["final"]
    # it really ran, under locks: both drivers committed and got locks, a report was checked
    assert all(r["done"] > 0 and r["lock_waits"] > 0 for r in roles.values()), roles
    assert roles["maintainer-2"]["reads_checked"] > 0
    assert "locks ON" in done.stdout and "failed by class: none" in done.stdout
