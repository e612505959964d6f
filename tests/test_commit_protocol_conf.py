"""A file write refused when ``spark.sql.sources.commitProtocolClass`` was changed at runtime away
from the lease-checking protocol the session started with (docs/fencing.md): the job commit of
such a write would not check the lease. Resetting the key makes writes work again."""

from __future__ import annotations

import pytest

from sparklock.errors import ConfigError
from tests.support.spark import SparkSpec

pytestmark = [pytest.mark.spark]

SPARK = SparkSpec(app="test_commit_protocol_conf")
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
