"""Benchmark 10: concurrent MERGE writers on one Delta table -- Delta with retries vs sparklock.

N writers (2, 4, 8) run ``MERGE INTO t`` for a fixed time (60 s; ``--seconds``), each MERGE
updating 50 random rows of a 20,000-row Delta table, so every MERGE rewrites files another one
rewrites too. Three ways, on the same table shape, taking turns per N:

* **Delta with retries** (``spark.sparklock.enabled=false``): Delta's optimistic concurrency;
  a MERGE whose commit fails with a conflict (``ConcurrentAppendException``,
  ``ConcurrentDeleteReadException``, ...) is run again at once, as Delta's docs advise. The
  seconds the failed attempts ran are work thrown away.
* **sparklock, embedded manager**: each MERGE takes EXCLUSIVE on the table before it reads
  anything, so MERGEs wait for each other instead of failing.
* **sparklock, ZooKeeper manager** (a ZooKeeper of its own on loopback): the same through
  ZooKeeper, as separate drivers would lock.

The writers are threads of one driver, each with a SparkSession of its own on the one
SparkContext (as a Thrift server's clients are): every MERGE is its own Delta transaction and its
own lock request either way, and N driver processes (N JVMs) on a 2-core machine would measure
JVM contention more than locking. Figures: completed MERGEs per minute (those that finished
within the window), conflicts, wasted execution seconds; the ratio is sparklock's MERGEs/min
over Delta's. An untimed 15 s cell runs first (the JVM's first MERGEs are slow), and the order
of the three ways turns with each N.

    python3 -m tests.benchmarks.bench_delta_merge [--quick] [--seconds 60] [--writers 2,4,8]

Needs delta-spark (``tests/versions.py 4.2.0`` or ``3.5`` venvs have it).
"""

from __future__ import annotations

import re

from . import merge_race

CONFLICT = re.compile(
    r"\b(?:io\.delta\.exceptions|org\.apache\.spark\.sql\.delta)\."
    r"(Concurrent\w*Exception|MetadataChangedException|ProtocolChangedException)\b"
)


def table_format() -> merge_race.TableFormat:
    """Delta's part: its tables, its conflict exceptions, its session."""
    from tests.support import delta

    return merge_race.TableFormat(
        number=10,
        name="Delta",
        using="delta",
        table_prefix="",
        conflict=CONFLICT,
        missing=delta.MISSING,
        version=str(delta.VERSION),
        start=lambda work: delta.delta_session("bench-delta-merge", work / "warehouse"),
    )


def run(quick: bool = False, seconds: float | None = None, writers=(2, 4, 8)) -> dict:
    return merge_race.run(table_format(), quick, seconds, writers)


def main(argv: list[str] | None = None) -> None:
    merge_race.main(table_format, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main()
