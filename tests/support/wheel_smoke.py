"""A user's first sparklock program, run by an installed wheel (``tests/test_wheel_install.py``).

    python wheel_smoke.py TABLE [--executor-check] [KEY=VALUE ...]
    spark-submit --master ... wheel_smoke.py TABLE ...

Configures a session, asks EXPLAIN LOCKS, inserts (locking), LOCK / SHOW LOCKS / UNLOCK, and
makes a second session of the same application conflict with the first's lock; prints one
``SMOKE {json}`` line of what it saw. It never imports anything from the checkout: it is copied
out of it and run with the wheel's ``sparklock``. ``--executor-check`` also runs a Python task on
the executors and reports whether they could import sparklock.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys

from pyspark.sql import SparkSession

import sparklock
from sparklock import shim


def _on_executor(_: int) -> bool:
    return importlib.util.find_spec("sparklock") is not None


def main(argv: list[str]) -> None:
    table, rest = argv[0], argv[1:]
    executor_check = "--executor-check" in rest
    builder = SparkSession.builder.appName(f"sparklock-wheel-smoke-{table}")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # python smoke.py: no spark-submit master
        builder = builder.master("local[2]")
    builder = builder.config("spark.ui.enabled", "false")
    builder = builder.config("spark.sparklock.lock.numRetries", "1")
    for item in rest:
        if "=" in item:
            key, value = item.split("=", 1)
            builder = builder.config(key, value)
    spark = sparklock.configure(builder).getOrCreate()
    seen: dict = {"sparklock": sparklock.__file__, "jar": str(shim.jar_path())}
    spark.sql(f"CREATE TABLE {table} (a INT) USING parquet")
    explain = spark.sql(f"EXPLAIN LOCKS INSERT INTO {table} VALUES (1)").collect()
    seen["explain"] = [[r[0], r[1]] for r in explain]
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    spark.sql(f"LOCK TABLE {table} EXCLUSIVE")
    seen["show"] = [[r[0], r[1]] for r in spark.sql("SHOW LOCKS").collect()]
    other = spark.newSession()
    try:
        other.sql(f"INSERT INTO {table} VALUES (2)")
        seen["conflict"] = None
    except Exception as e:  # noqa: BLE001 - the conflict's text is what is checked
        lines = str(e).strip().splitlines()
        seen["conflict"] = next((x for x in lines if "LOCK_CONFLICT" in x), lines[0])
    spark.sql(f"UNLOCK TABLE {table}")
    seen["show_after_unlock"] = [list(r) for r in spark.sql("SHOW LOCKS").collect()]
    other.sql(f"INSERT INTO {table} VALUES (2)")
    seen["count"] = spark.table(table).count()
    if executor_check:
        rdd = spark.sparkContext.parallelize(range(2), 2)
        seen["executors_import_sparklock"] = rdd.map(_on_executor).collect()
    spark.sql(f"DROP TABLE {table}")
    print("SMOKE " + json.dumps(seen), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
