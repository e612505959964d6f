"""Run the benchmarks (all, or those named) and print their tables: sparklock vs Hive's manager.

    python3 -m tests.benchmarks.run                 # all six, several minutes
    python3 -m tests.benchmarks.run latency wide    # some of them
    python3 -m tests.benchmarks.run --quick         # fewer rounds (a smoke run)

Each benchmark starts its own ZooKeeper on 127.0.0.1 (from the pyspark jars) and stops it; Hive's
ZooKeeperHiveLockManager (Hive 2.3.10, also from the pyspark jars) runs in a JVM compiled on first
use from ``tests/benchmarks/HiveLockBench.java``. Figures are medians of repeated rounds; ratios
say how many times better sparklock is (above 1: faster) except where a table says otherwise.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from importlib import import_module

BENCHMARKS = {
    "latency": "bench_latency",
    "handoff": "bench_handoff",
    "throughput": "bench_throughput",
    "spark": "bench_spark",
    "lease-cost": "bench_lease_cost",
    "wide": "bench_wide",
    "wide-read": "bench_wide_read",
    "security": "bench_security",
    "metastore": "bench_metastore",
    "metastore-spark": "bench_metastore_spark",
    "delta-merge": "bench_delta_merge",
    "iceberg-merge": "bench_iceberg_merge",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names", nargs="*", metavar="name", help=f"default all: {', '.join(BENCHMARKS)}"
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds, shorter runs")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(
            f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}"
        )
    names = args.names or list(BENCHMARKS)
    import kazoo.version
    import pyspark

    print(
        f"sparklock benchmarks — {time.strftime('%Y-%m-%d %H:%M:%S')}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, pyspark {pyspark.__version__}, "
        f"kazoo {kazoo.version.__version__}, "
        f"ZooKeeper and Hive 2.3.10 from the pyspark jars{', quick' if args.quick else ''}"
    )
    start = time.monotonic()
    for name in names:
        t0 = time.monotonic()
        import_module(f"tests.benchmarks.{BENCHMARKS[name]}").run(args.quick)
        print(f"({name}: {time.monotonic() - t0:.0f} s)")
        sys.stdout.flush()
    print(f"\nall done in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
