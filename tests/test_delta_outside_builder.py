"""Delta configured outside the builder (``spark-defaults.conf`` and ``--packages`` in
``PYSPARK_SUBMIT_ARGS``, the builder naming no Delta at all) still gets the lease-checking log
store (docs/fencing.md, sparklock/spark/delta_commits.py).

The session runs in a child process of its own: the launch settings under test are read when
pyspark launches the JVM, which this process may have done already.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import delta

pytestmark = [pytest.mark.spark, pytest.mark.delta, delta.needs_delta]

LEASE_STORE = "io.sparklock.shim.delta.LeaseHdfsLogStore"

_CHILD = """
import sys
from pyspark.sql import SparkSession
import sparklock

builder = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.warehouse.dir", sys.argv[1])
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.databricks.delta.snapshotPartitions", "1")
)
spark = sparklock.configure(builder).getOrCreate()
spark.sql("CREATE TABLE t (id INT) USING delta")
spark.sql("INSERT INTO t VALUES (1)")
location = spark.sql("DESCRIBE DETAIL t").collect()[0]["location"]
log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, location)
store = log.store().getDelegate(log.logPath())
print("STORE", store.logStoreImpl().getClass().getName())
print("ROWS", spark.table("t").count())
spark.stop()
"""


def test_delta_from_the_defaults_file_and_packages_gets_the_lease_store(tmp_path: Path):
    delta.jars()  # the Ivy cache filled, so the child resolves --packages offline
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.sql.extensions {delta.EXTENSION}\n"
        f"{delta.CATALOG_KEY} {delta.CATALOG}\n"
        f"{delta.IVY_KEY} {delta.ivy_dir()}\n"
    )
    env = {
        **os.environ,
        "SPARK_CONF_DIR": str(conf_dir),
        "PYSPARK_SUBMIT_ARGS": f"--packages {delta.artifact()} pyspark-shell",
        "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("PYSPARK_GATEWAY_PORT", None)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "warehouse")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"STORE {LEASE_STORE}" in proc.stdout, proc.stdout
    assert "ROWS 1" in proc.stdout, proc.stdout
