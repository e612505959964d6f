"""Where a locked statement's Python CPU goes, with sparklock before the lease and now.

Not one of the numbered benchmarks (``run.py``): a diagnostic. On two cores the driver's Python
competes with the JVM running the query, so CPU it spends beside the query (a thread pushing to
the JVM, kazoo's threads handling answers and watch events) shows in the statement's time
although no timed piece of ``narrow_breakdown`` waits for it. Each tree runs in a driver of its
own (as in ``bench_lease_cost``) that attaches py-spy to itself and runs the pruned SELECT of
benchmark 4 locked on ZooKeeper; only samples of running threads count (1 kHz: one sample is a
millisecond of one thread's CPU).

    python3 -m tests.benchmarks.python_cpu [--before REV] [--statements N] [--sql select|insert]

Needs ``py-spy`` on the PATH (``pip install py-spy``: not a dependency of sparklock).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import common
from .bench_lease_cost import LEASE_MERGE, REPO, STATEMENTS, export_tree

SQL = dict(zip(("select", "insert"), STATEMENTS.values(), strict=True))
WARMUP = 40


def child(zk_address: str, sql: str, statements: int, out: str) -> None:
    """In the tree's own process: warm up, then run ``statements`` under py-spy."""
    import logging

    from . import bench_spark

    logging.getLogger("py4j").setLevel(logging.WARNING)
    warehouse = tempfile.mkdtemp(prefix="sparklock-bench-cpu-")
    spark = bench_spark.build_session(
        "bench-cpu",
        warehouse,
        conf={
            "spark.sparklock.zookeeper.quorum": zk_address,
            "spark.sparklock.zookeeper.namespace": f"bench_cpu_{os.getpid()}",
        },
    )
    try:
        bench_spark.make_tables(spark)
        bench_spark.set_mode(spark, "zookeeper")
        for _ in range(WARMUP):
            spark.sql(sql).collect()
        spy = subprocess.Popen(
            ["py-spy", "record", "--pid", str(os.getpid()), "-r", "1000", "-f", "raw"]
            + ["-o", out, "--nonblocking", "--threads"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(2)  # attached
        for _ in range(statements):
            spark.sql(sql).collect()
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)


def thread_group(name: str) -> str:
    """A sampled thread's name without py-spy's id and Python's numbering."""
    name = re.sub(r"\(\d+\)", "", name).replace("thread :", "").strip()
    name = re.sub(r"^Thread-\d+ ", "", name)
    return {
        "(zk_loop)": "kazoo's connection thread",
        "(_thread_worker)": "kazoo's callback and completion threads",
        "(run)": "py4j threads (callbacks into Python)",
        "(serve_forever)": "py4j's callback server",
        "MainThread": "the main thread (spark.sql ... collect)",
    }.get(name, name)


def cpu_per_statement(raw: Path, statements: int) -> dict[str, float]:
    """ms of CPU per statement by thread group, from py-spy's raw (collapsed) output."""
    by_group: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        by_group[thread_group(stack.split(";", 1)[0])] += int(count)
    return {group: samples / statements for group, samples in by_group.items()}


def run(before: str | None, statements: int, sql: str) -> None:
    if shutil.which("py-spy") is None:
        sys.exit("python_cpu needs py-spy on the PATH (pip install py-spy)")
    work = Path(tempfile.mkdtemp(prefix="sparklock-bench-cpu-trees-"))
    rev = before or f"{LEASE_MERGE}^1"
    trees = {"before": export_tree(rev, work / "before"), "after": REPO}
    found: dict[str, dict[str, float]] = {}
    try:
        with common.zookeeper() as zk:
            common.warm_server(zk)
            for name, tree in trees.items():
                out = work / f"{name}.txt"
                code = (
                    "import sys; from tests.benchmarks.python_cpu import child; "
                    "child(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])"
                )
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(REPO)]))
                subprocess.run(
                    [sys.executable, "-c", code, zk.address, SQL[sql], str(statements), str(out)],
                    env=env,
                    cwd=tempfile.gettempdir(),
                    check=True,
                    timeout=3600,
                )
                found[name] = cpu_per_statement(out, statements)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    groups = sorted(
        set(found["before"]) | set(found["after"]), key=lambda g: -found["after"].get(g, 0)
    )
    rows = [["all threads", *(f"{sum(found[t].values()):.2f}" for t in trees)]]
    rows += [[g, *(f"{found[t].get(g, 0):.2f}" for t in trees)] for g in groups]
    title = f"Python CPU per locked {sql} (ms), sparklock {rev} and now, {statements} statements"
    common.print_table(title, ["thread", f"before ({rev})", "now"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help=f"the earlier tree (default {LEASE_MERGE}^1)")
    parser.add_argument("--statements", type=int, default=400)
    parser.add_argument("--sql", choices=sorted(SQL), default="select")
    args = parser.parse_args()
    run(args.before, args.statements, args.sql)


if __name__ == "__main__":
    main()
