"""Benchmark 11: concurrent MERGE writers on one Iceberg table -- Iceberg with retries vs sparklock.

N writers (2, 4, 8) run ``MERGE INTO t`` for a fixed time (60 s; ``--seconds``), each MERGE
updating 50 random rows of a 20,000-row Iceberg table (copy-on-write, Iceberg's default), so
every MERGE rewrites files another one rewrites too. Three ways, on the same table shape, taking
turns per N, as ``bench_delta_merge`` does for Delta (both are ``merge_race`` runs):

* **Iceberg with retries** (``spark.sparklock.enabled=false``): Iceberg's optimistic
  concurrency; a MERGE whose commit fails (``ValidationException: Found conflicting files``,
  ``CommitFailedException``) is run again at once. The seconds the failed attempts ran are work
  thrown away.
* **sparklock, embedded manager**: each MERGE takes EXCLUSIVE on the table before it reads
  anything, so MERGEs wait for each other instead of failing.
* **sparklock, ZooKeeper manager** (a ZooKeeper of its own on loopback): the same through
  ZooKeeper, as separate drivers would lock.

The writers are threads of one driver, each with a SparkSession of its own on the one
SparkContext: every MERGE is its own Iceberg commit and its own lock request either way, and the
embedded manager locks only within one driver (separate driver processes need ZooKeeper or the
metastore; ``examples/iceberg_pipelines.py`` runs those). Figures: completed MERGEs per minute,
conflicts, wasted execution seconds; the ratio is sparklock's MERGEs/min over Iceberg's. Every
way keeps the retry loop, so a conflict under locks would be counted, not hidden (sparklock
takes the lock before Iceberg plans the scan, so a MERGE that waited plans from the newest
snapshot and none is expected).

    python3 -m tests.benchmarks.bench_iceberg_merge [--quick] [--seconds 60] [--writers 2,4,8]

Needs a pyspark line Iceberg builds a runtime for (3.5, 4.0, 4.1: ``tests/versions.py 4.1``).
"""

from __future__ import annotations

import re
from pathlib import Path

from . import merge_race

#: Iceberg's commit failures: the statement did all its work, its commit is refused
CONFLICT = re.compile(
    r"\borg\.apache\.iceberg\.exceptions\.(ValidationException|CommitFailedException)\b"
    r"|Found conflicting files|Cannot commit"
)


def _session(work: Path):
    from tests.support import iceberg

    # each session's catalog would serve its cached (stale) table for 30 s
    fresh = {"spark.sql.catalog.ice.cache-enabled": "false"}
    spark = iceberg.iceberg_session("bench-iceberg-merge", work, **fresh)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.bench")
    return spark


def table_format() -> merge_race.TableFormat:
    """Iceberg's part: its tables (a hadoop catalog ``ice``), its commit failures, its session."""
    from tests.support import iceberg

    return merge_race.TableFormat(
        number=11,
        name="Iceberg",
        using="iceberg",
        table_prefix="ice.bench.",
        conflict=CONFLICT,
        missing=iceberg.MISSING,
        version=iceberg.RUNTIME.version if iceberg.RUNTIME else "?",
        start=_session,
    )


def run(quick: bool = False, seconds: float | None = None, writers=(2, 4, 8)) -> dict:
    return merge_race.run(table_format(), quick, seconds, writers)


def main(argv: list[str] | None = None) -> None:
    merge_race.main(table_format, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
