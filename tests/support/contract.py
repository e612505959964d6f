"""The bridge contract from the test side: Java records and Python dataclasses name the same
fields (the JSON name of a field is the camelCase of its Python name; jvm-shim/BRIDGE.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparklock.rules.facts import wire_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def assert_records_match(spark: SparkSession, contract: Mapping[str, type]) -> None:
    """Each ``io.sparklock.shim.wire.<java name>`` record has its dataclass's fields, in order."""
    reflection = spark.sparkContext._jvm.py4j.reflection.ReflectionUtil
    for java_name, cls in contract.items():
        record = reflection.classForName("io.sparklock.shim.wire." + java_name)
        java = [c.getName() for c in record.getRecordComponents()]
        python = [wire_name(f.name) for f in dataclasses.fields(cls)]
        assert java == python, java_name
