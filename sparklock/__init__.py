"""sparklock: Apache Hive's table/partition locking for Spark SQL.

``spark = sparklock.configure(SparkSession.builder.master("local[2]")).getOrCreate()`` and every
statement takes its locks before it runs. Importing this package starts no JVM: the lock model,
the managers and the command-line tool work without one (the errors are ``pyspark.errors``
classes, so ``pyspark`` itself is imported).

Errors: ``except sparklock.LockConflictError as e:`` and read ``e.holders`` (docs/errors.md).
"""

from __future__ import annotations

from .errors import (
    ConfigError,
    DeadlockError,
    LockConflictError,
    LockManagerUnavailableError,
    LocksLostError,
    LockWaitCancelledError,
    NotLockedError,
    SparkLockError,
    UnlockError,
    UnlockNotOwnerError,
)
from .spark.builder import configure

__all__ = [
    "ConfigError",
    "DeadlockError",
    "LockConflictError",
    "LockManagerUnavailableError",
    "LockWaitCancelledError",
    "LocksLostError",
    "NotLockedError",
    "SparkLockError",
    "UnlockError",
    "UnlockNotOwnerError",
    "configure",
]
