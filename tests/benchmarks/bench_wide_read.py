"""Benchmark 6: a full read of a wide table, end to end in Spark — what re-listing costs.

``SELECT count(*), sum(v)`` over every partition of a parquet table with 1,000 and with 10,000
partitions (one small file each, partitions tracked in the catalog), on one local Spark session.
Each locked mode runs in a block of its own, taking turns round by round with the unlocked run
(``spark.sparklock.enabled=false``) on the same session, so that drift hits both alike; the ratio
is the median of each round's locked / unlocked pair. Locked modes: the embedded and the
ZooKeeper manager (a ZooKeeper of its own on loopback), each with the re-listing rule of
``spark.sparklock.read.refreshListing=true`` (re-list what a writer changed since the listing:
nothing here) and with ``=all`` (every partition directory listed again after every grant, the
rule before write epochs). ``listed`` is the partition directories the JVM listed per locked
statement, and the file indexes it refreshed whole (``ShimProbes.listingStats``). Blocks
run after one untimed statement in every mode, each mode's rounds in two blocks in mirrored
order (the table's order, then back), each block after one untimed warm-up round of its own.
The ZooKeeper server is warmed up first with untimed lock sets of the table's width
(``common.warm_up``): a fresh server's JIT takes ~20 wide statements to settle.

    python3 -m tests.benchmarks.bench_wide_read [--quick] [--partitions 1000,10000]
                                                [--refresh true,all]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
import time

from tests.support.spark import build_session

from . import common

PARTITIONS = (1_000, 10_000)
ROUNDS = {1_000: 31, 10_000: 8}
QUICK_ROUNDS = {1_000: 3, 10_000: 1}
#: (manager, spark.sparklock.read.refreshListing)
MODES = (("embedded", "true"), ("zookeeper", "true"), ("embedded", "all"), ("zookeeper", "all"))
LABELS = {"true": "changed only", "all": "full re-list"}


def _stats(spark) -> dict[str, int]:
    text = spark.sparkContext._jvm.io.sparklock.shim.ShimProbes.listingStats()
    return {k: int(v) for k, v in (part.split("=") for part in text.split())}


def _set(spark, manager: str | None, refresh: str = "true") -> None:
    if manager is None:
        spark.conf.set("spark.sparklock.enabled", "false")
        return
    spark.conf.set("spark.sparklock.enabled", "true")
    spark.conf.set("spark.sparklock.manager", manager)
    spark.conf.set("spark.sparklock.read.refreshListing", refresh)


def _timed(spark, sql: str) -> float:
    t0 = time.perf_counter()
    spark.sql(sql).collect()
    return (time.perf_counter() - t0) * 1000


def run(
    quick: bool = False,
    partitions: tuple[int, ...] = PARTITIONS,
    modes: tuple[tuple[str, str], ...] = MODES,
) -> dict:
    logging.getLogger("py4j").setLevel(logging.WARNING)
    rounds = QUICK_ROUNDS if quick else ROUNDS
    warehouse = tempfile.mkdtemp(prefix="sparklock-bench-wide-read-")
    result: dict = {}
    try:
        with common.zookeeper() as zk:
            common.warm_server(zk, width=max(partitions))  # the server's JIT, as in production
            conf = {
                "spark.sparklock.zookeeper.quorum": zk.address,
                "spark.sparklock.zookeeper.namespace": "bench_wide_read",
            }
            spark = build_session("bench-wide-read", warehouse, conf=conf)
            try:
                for n in partitions:
                    result.update(_one_table(spark, n, rounds.get(n, 3), modes))
            finally:
                spark.stop()
                from sparklock.managers import close_all

                close_all()
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    return result


def _one_table(spark, n: int, rounds: int, modes: tuple[tuple[str, str], ...]) -> dict:
    table = f"wide{n}"
    _set(spark, None)
    t0 = time.perf_counter()
    spark.sql(f"CREATE TABLE {table} (v BIGINT, p INT) USING parquet PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {table} SELECT id, id FROM range({n})")
    created = time.perf_counter() - t0
    sql = f"SELECT count(*), sum(v) FROM {table}"
    spark.sql(sql).collect()  # the session's relation and file status cache, as a user's
    for manager, refresh in modes:  # JIT and first listings of every mode, untimed
        _set(spark, manager, refresh)
        spark.sql(sql).collect()
    rows = []
    result = {}
    unlocked_of: dict[tuple[str, str], list[float]] = {m: [] for m in modes}
    locked_of: dict[tuple[str, str], list[float]] = {m: [] for m in modes}
    counts = {m: [0, 0] for m in modes}  # directories listed, indexes refreshed whole
    # mirrored blocks (A B C D D C B A): the locked path's JIT keeps warming for a while after
    # the untimed statements, and one block per mode would charge it to the first mode
    for half, order in enumerate((modes, modes[::-1])):
        for manager, refresh in order:
            mode_key = (manager, refresh)
            block = (rounds + 1 - half) // 2  # odd counts: the first half has one more
            if not block:
                continue
            for i in range(block + 1):
                order_pair = ((None, unlocked_of[mode_key]), (manager, locked_of[mode_key]))
                if i % 2:
                    order_pair = order_pair[::-1]
                for mode, times in order_pair:
                    _set(spark, mode, refresh)
                    before = _stats(spark)
                    elapsed = _timed(spark, sql)
                    if i:  # each block's round 0 warms the mode up
                        times.append(elapsed)
                        if mode is not None:
                            after = _stats(spark)
                            counts[mode_key][0] += after["paths"] - before["paths"]
                            counts[mode_key][1] += after["whole"] - before["whole"]
    for manager, refresh in modes:
        unlocked = unlocked_of[manager, refresh]
        locked = locked_of[manager, refresh]
        listed, whole = counts[manager, refresh]
        _set(spark, None)
        ratio = common.median_ci([a / b for a, b in zip(locked, unlocked, strict=True)])
        result[n, manager, refresh] = (common.median(unlocked), common.median(locked), ratio[0])
        rows.append(
            [
                f"{n:,}",
                f"{manager}, {LABELS[refresh]}",
                common.fmt_ms(common.median(unlocked)),
                common.fmt_ms(common.median(locked)),
                common.fmt_ratio_ci(*ratio),
                f"{listed / len(locked):,.0f}",
                f"{whole / len(locked):,.0f}",
            ]
        )
    common.print_table(
        f"6. Full read of a {n:,}-partition parquet table in Spark (local[2], table made in "
        f"{created:.0f} s): statement time, locked vs unlocked (ms, median of {rounds} rounds; "
        "ratio = median of per-round locked / unlocked, its ~95 % interval in brackets)",
        [
            "partitions",
            "locked mode",
            "unlocked",
            "locked",
            "ratio",
            "dirs listed",
            "indexes refreshed whole",
        ],
        rows,
    )
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument(
        "--partitions", default=",".join(str(p) for p in PARTITIONS), help="table widths"
    )
    parser.add_argument(
        "--refresh",
        default="true,all",
        help="refreshListing values to run (true: changed only, all: full re-list)",
    )
    args = parser.parse_args()
    wanted = args.refresh.split(",")
    unknown = sorted(set(wanted) - set(LABELS))
    if unknown:
        parser.error(f"--refresh: unknown {', '.join(unknown)}; choose from {', '.join(LABELS)}")
    run(
        args.quick,
        tuple(int(p) for p in args.partitions.split(",")),
        tuple(m for m in MODES if m[1] in wanted),
    )
