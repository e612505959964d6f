"""Benchmark 8b: end-to-end locking overhead in Spark with the metastore manager against the
ZooKeeper manager, in the same run: locked / unlocked ratios of a pruned read and a partitioned
INSERT.

Benchmark 4's method (``bench_spark``): one local Spark session, every statement timed from
``spark.sql(...)`` to its last row, each locked mode in blocks of its own taking turns round by
round with the unlocked run (``spark.sparklock.enabled=false``), mirrored block order, medians;
the ratio is the median of each round's locked / unlocked pair with its ~95 % interval. The
locks go to a standalone Hive 4.0.1 metastore on PostgreSQL (``tests.support.metastore``) or to
a warmed-up ZooKeeper, both on loopback; the catalog is the session's own (what is measured is
the locking, not a remote catalog). A last column runs unlocked against unlocked: the noise
floor of the run.

    python3 -m tests.benchmarks.bench_metastore_spark [--quick]
"""

from __future__ import annotations

import logging
import shutil
import tempfile

from tests.support.metastore import MetastoreServer
from tests.support.spark import build_session

from . import common
from .bench_spark import make_tables, measure, ratio_rows

STATEMENTS = {
    "pruned SELECT (1 of 24 partitions)": "SELECT count(*), sum(v) FROM src WHERE ds = 'd07'",
    "partitioned INSERT": (
        "INSERT OVERWRITE TABLE dst PARTITION (ds = 'x') SELECT id, v FROM src WHERE ds = 'd03'"
    ),
}
ROUNDS = {"pruned SELECT (1 of 24 partitions)": 150, "partitioned INSERT": 100}
QUICK_ROUNDS = {"pruned SELECT (1 of 24 partitions)": 10, "partitioned INSERT": 6}
MODES = ("unlocked", "zookeeper", "metastore", "unlocked-again")


def run(quick: bool = False) -> dict:
    logging.getLogger("py4j").setLevel(logging.WARNING)
    rounds = QUICK_ROUNDS if quick else ROUNDS
    warehouse = tempfile.mkdtemp(prefix="sparklock-bench-warehouse-")
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    try:
        with MetastoreServer(txn_timeout="300s") as hms, common.zookeeper() as zk:
            common.warm_server(zk)
            conf = {
                "spark.sparklock.zookeeper.quorum": zk.address,
                "spark.sparklock.zookeeper.namespace": "bench_metastore_spark",
                "spark.sparklock.metastore.uris": hms.uri,
            }
            spark = build_session("bench-metastore", warehouse, conf=conf)
            try:
                make_tables(spark)
                measure(spark, STATEMENTS, MODES, rounds, times)
            finally:
                spark.stop()
                from sparklock.managers import close_all

                close_all()  # both managers' connections, before their servers stop
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)

    rows, result = ratio_rows(STATEMENTS, MODES, times)
    common.print_table(
        "8b. Spark (local[2]) with the metastore vs the ZooKeeper manager: statement time, "
        "locked / unlocked in the same block (ms, median; ratio = median of per-round locked / "
        "unlocked, ~95 % interval in brackets; the last column: unlocked against unlocked)",
        ["statement", "ZooKeeper", "ratio", "metastore", "ratio", "unlocked again", "ratio"],
        rows,
    )
    return result


if __name__ == "__main__":
    common.bench_main(run, __doc__)
