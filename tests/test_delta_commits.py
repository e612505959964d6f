"""What ``sparklock.configure`` sets for Delta's log commits (sparklock/spark/delta_commits.py):
only where the session will have Delta (on the builder or configured outside it), never over a
store the user chose. No JVM (the stores at work on a real Delta: tests/test_delta_lease.py)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from sparklock.spark import delta_commits
from sparklock.spark.delta_commits import (
    DETECT_KEYS,
    STORES,
    scheme_key,
    stores_to_set,
    uses_delta,
)
from sparklock.spark.launch_conf import outside_builder, submit_args_conf

DELTA_BUILDER_OPTIONS = {"spark.sql.extensions": delta_commits.DELTA_EXTENSION}


def test_delta_is_recognised_by_what_a_delta_builder_carries():
    assert not uses_delta({})
    assert not uses_delta({"spark.sql.extensions": "io.sparklock.shim.SparkLockExtensions"})
    assert uses_delta({"spark.sql.extensions": f"a.B,{delta_commits.DELTA_EXTENSION}"})
    assert uses_delta({"spark.sql.catalog.spark_catalog": delta_commits.DELTA_CATALOG})
    assert uses_delta({"spark.jars.packages": "org.x:y:1,io.delta:delta-spark_2.13:4.0.1"})
    assert uses_delta({"spark.jars": "/opt/jars/delta-spark_2.12-3.3.2.jar"})


def test_every_scheme_with_a_delta_default_gets_its_wrapper():
    stores = stores_to_set(DELTA_BUILDER_OPTIONS, {})
    assert stores[scheme_key("file")] == "io.sparklock.shim.delta.LeaseHdfsLogStore"
    assert stores[scheme_key("s3a")] == "io.sparklock.shim.delta.LeaseS3LogStore"
    assert stores[scheme_key("abfss")] == "io.sparklock.shim.delta.LeaseAzureLogStore"
    assert stores[scheme_key("gs")] == "io.sparklock.shim.delta.LeaseGcsLogStore"
    assert len(stores) == len(STORES)


def test_a_store_the_user_chose_is_kept():
    mine = "io.delta.storage.S3DynamoDBLogStore"
    for options, defaults in (
        ({scheme_key("s3a"): mine}, {}),
        ({"delta.logStore.s3a.impl": mine}, {}),  # Delta accepts the key without "spark."
        ({}, {scheme_key("s3a"): mine}),  # spark-defaults.conf
    ):
        stores = stores_to_set({**DELTA_BUILDER_OPTIONS, **options}, defaults)
        assert scheme_key("s3a") not in stores
        assert scheme_key("file") in stores


def test_a_store_class_for_every_scheme_means_nothing_is_set():
    # Delta refuses spark.delta.logStore.class together with any per-scheme key
    for key in delta_commits.CLASS_KEYS:
        assert stores_to_set({key: "com.example.MyLogStore"}, {}) == {}
        assert stores_to_set({}, {key: "com.example.MyLogStore"}) == {}


def test_a_builder_without_delta_gets_nothing():
    builder = SparkSession.Builder().config("spark.jars", "/x.jar")
    assert delta_commits.configure(builder) is None
    assert builder._options["spark.jars"] == "/x.jar"
    assert not [k for k in builder._options if "logStore" in k]


def test_spark_submit_args_are_read_as_conf():
    args = (
        "--master local[2] --packages io.delta:delta-spark_2.13:4.0.1 --jars /a.jar,/b.jar "
        "--conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension "
        "-c spark.x=1 --conf=spark.y=2 --driver-memory 2g pyspark-shell"
    )
    assert submit_args_conf(args) == {
        "spark.jars.packages": "io.delta:delta-spark_2.13:4.0.1",
        "spark.jars": "/a.jar,/b.jar",
        "spark.sql.extensions": delta_commits.DELTA_EXTENSION,
        "spark.x": "1",
        "spark.y": "2",
    }
    assert submit_args_conf("pyspark-shell") == {}
    assert submit_args_conf("--conf 'unbalanced") == {}


def test_delta_configured_outside_the_builder_is_recognised(tmp_path, monkeypatch):
    """Delta in spark-defaults.conf or in PYSPARK_SUBMIT_ARGS, a builder that names none."""
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    builder_options = {"spark.sql.extensions": "io.sparklock.shim.SparkLockExtensions"}
    assert not uses_delta(builder_options, None, outside_builder(DETECT_KEYS))
    (tmp_path / "spark-defaults.conf").write_text(
        f"spark.sql.extensions   {delta_commits.DELTA_EXTENSION}\n"
    )
    assert uses_delta(builder_options, None, outside_builder(DETECT_KEYS))
    (tmp_path / "spark-defaults.conf").write_text("# nothing\n")
    monkeypatch.setenv(
        "PYSPARK_SUBMIT_ARGS", "--packages io.delta:delta-spark_2.12:3.3.2 pyspark-shell"
    )
    assert uses_delta(builder_options, None, outside_builder(DETECT_KEYS))
