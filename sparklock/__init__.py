"""sparklock: Apache Hive's table/partition locking for Spark SQL.

``spark = sparklock.configure(SparkSession.builder.master("local[2]")).getOrCreate()`` and every
statement takes its locks before it runs. Importing this package does not import pyspark: the lock
model, the managers and the command-line tool work without a JVM.
"""

from __future__ import annotations

from .spark.builder import configure

__all__ = ["configure"]
