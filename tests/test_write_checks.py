"""Which writes reach a lease check (docs/fencing.md), on every Spark line, no lock service needed:
a v2 write's ``BatchWrite.commit`` goes through the checked proxy (Spark's own ``noop`` v2
source, whose node's constructor differs per line); a file write is refused when
``spark.sql.sources.commitProtocolClass`` was changed at runtime away from the lease-checking
protocol the session started with (its job commit would not check the lease), and works again
once the key is reset. The lapses themselves: tests/test_v2_write_lease.py and the other
lease tests."""

from __future__ import annotations

import threading

import pytest

from sparklock.errors import ConfigError
from tests.support.lease_faults import wait_until
from tests.support.spark import SparkSpec

pytestmark = [pytest.mark.spark]

SPARK = SparkSpec(app="test_write_checks")
KEY = "spark.sql.sources.commitProtocolClass"
SPARKS_OWN = "org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol"


def test_the_session_starts_with_the_lease_protocol(spark):
    assert spark.conf.get(KEY) == "io.sparklock.shim.LeaseCommitProtocol"


def test_a_protocol_set_at_runtime_refuses_file_writes_until_reset(spark, tmp_path):
    spark.sql("CREATE TABLE swapped (id INT) USING parquet")
    try:
        spark.sql(f"SET {KEY}={SPARKS_OWN}")
        with pytest.raises(ConfigError, match=KEY):
            spark.sql("INSERT INTO swapped VALUES (1)")
        spark.conf.set(KEY, SPARKS_OWN)  # the Python API is a runtime change too
        with pytest.raises(ConfigError, match=r"RESET spark\.sql\.sources\.commitProtocolClass"):
            spark.range(3).write.parquet(str(tmp_path / "out"))
        assert not (tmp_path / "out").exists(), "the refused write left output"
    finally:
        spark.sql(f"RESET {KEY}")
    spark.sql("INSERT INTO swapped VALUES (2)")
    assert [r[0] for r in spark.table("swapped").collect()] == [2]


def test_a_v2_write_commits_through_the_checked_batch(spark):
    """The test hold of the checked batch (before its lease check) stops the commit: the
    proxy is in place; released, the write completes."""
    holds = spark._jvm.io.sparklock.shim.write.CheckedWrites
    outcome: dict[str, object] = {}

    def write() -> None:
        try:
            spark.range(4).write.format("noop").mode("append").save()
            outcome["ok"] = True
        except Exception as e:  # noqa: BLE001 - reported below
            outcome["error"] = str(e)

    holds.holdCommits()
    writer = threading.Thread(target=write)
    writer.start()
    try:
        wait_until(lambda: holds.heldCommits() > 0, 60, "the noop write to reach its commit")
    finally:
        holds.releaseCommits()
        writer.join(60)
    assert outcome == {"ok": True}
