"""Where a locked statement's Python CPU goes, with sparklock before the lease and now.

Not one of the numbered benchmarks (``run.py``): a diagnostic. On two cores the driver's Python
competes with the JVM running the query, so CPU it spends beside the query (a thread pushing to
the JVM, kazoo's threads handling answers and watch events) shows in the statement's time
although no timed piece of ``narrow_breakdown`` waits for it. Each tree runs in a driver of its
own (as in ``bench_lease_cost``) that attaches py-spy to itself and runs the pruned SELECT of
benchmark 4 locked on ZooKeeper; only samples of running threads count (1 kHz: one sample is a
millisecond of one thread's CPU).

    python3 -m tests.benchmarks.python_cpu [--before REV] [--statements N] [--sql select|insert]
        [--clock py-spy|proc]

``--clock py-spy`` (the default) needs ``py-spy`` on the PATH (``pip install py-spy``: not a
dependency of sparklock); its samples also count a thread that is runnable but waits for a core.
``--clock proc`` reads each thread's CPU time from ``/proc`` instead (Linux; 10 ms ticks, summed
over the run) and counts the ZooKeeper requests and watch events per statement: what each tree
sends, which is what most of those threads' CPU follows.
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


def child(zk_address: str, sql: str, statements: int, out: str, clock: str = "py-spy") -> None:
    """In the tree's own process: warm up, then run ``statements`` under py-spy (or, with
    ``clock="proc"``, between two readings of the threads' CPU times)."""
    import logging

    from . import bench_spark

    logging.getLogger("py4j").setLevel(logging.WARNING)
    if clock == "proc":
        _count_requests()
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
        if clock == "proc":
            _proc_clock(spark, sql, statements, Path(out))
            return
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


def _thread_ticks() -> dict[int, tuple[str, int]]:
    """Each live thread of this process: its Python name (or the kernel's), CPU ticks used."""
    import threading

    names = {t.native_id: t.name for t in threading.enumerate()}
    ticks = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
        except OSError:
            continue  # ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        name = names.get(int(tid), "(native) " + stat[stat.index("(") + 1 : stat.rindex(")")])
        ticks[int(tid)] = (name, int(fields[11]) + int(fields[12]))  # utime + stime
    return ticks


#: ZooKeeper requests sent and watch events read, by kind, while :func:`_counting` is on.
SENT: collections.Counter[str] = collections.Counter()


def _count_requests() -> None:
    """Count what kazoo's connection thread sends and reads from now on: installed before the
    session starts, below the wrappers sparklock puts on the connection's instance."""
    from kazoo.protocol import connection

    submit = connection.ConnectionHandler._submit
    event = connection.ConnectionHandler._read_watch_event

    def counting_submit(self, request, timeout, xid=None):
        SENT[f"request {type(request).__name__}"] += 1
        return submit(self, request, timeout, xid)

    def counting_event(self, buffer, offset):
        SENT["watch event"] += 1
        return event(self, buffer, offset)

    connection.ConnectionHandler._submit = counting_submit
    connection.ConnectionHandler._read_watch_event = counting_event


def _proc_clock(spark, sql: str, statements: int, out: Path) -> None:
    """Runs ``statements``; writes ms of CPU per statement by Python thread, and ZooKeeper
    requests and watch events per statement, as ``group count`` lines."""
    before = _thread_ticks()
    SENT.clear()
    for _ in range(statements):
        spark.sql(sql).collect()
    sent = dict(SENT)
    after = _thread_ticks()
    ms_per_tick = 1000.0 / os.sysconf("SC_CLK_TCK")
    by_group: collections.Counter[str] = collections.Counter()
    for tid, (name, used) in after.items():
        if not name.startswith("(native)"):
            by_group[thread_group(name)] += (used - before.get(tid, (name, 0))[1]) * ms_per_tick
    lines = [f"{g}\t{v}" for g, v in by_group.items()] + [f"{k}\t{v}" for k, v in sent.items()]
    out.write_text("\n".join(lines) + "\n")


def thread_group(name: str) -> str:
    """A sampled thread's name without py-spy's id and Python's numbering."""
    name = re.sub(r"\(\d+\)", "", name).replace("thread :", "").strip()
    name = re.sub(r"^Thread-\d+ ", "", name)
    name = re.sub(r"^Thread-\d+$", "other threads", name)
    return {
        "(zk_loop)": "kazoo's connection thread",
        "(_thread_worker)": "kazoo's callback and completion threads",
        "(run)": "py4j threads (callbacks into Python)",
        "(serve_forever)": "py4j's callback server",
        "MainThread": "the main thread (spark.sql ... collect)",
    }.get(name, name)


def cpu_per_statement(raw: Path, statements: int, clock: str = "py-spy") -> dict[str, float]:
    """ms of CPU per statement by thread group, from py-spy's raw (collapsed) output (or the
    ``/proc`` clock's lines, with its requests per statement)."""
    by_group: collections.Counter[str] = collections.Counter()
    if clock == "proc":
        for line in raw.read_text().splitlines():
            group, _, value = line.partition("\t")
            by_group[group] += float(value)
        return {group: total / statements for group, total in by_group.items()}
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        by_group[thread_group(stack.split(";", 1)[0])] += int(count)
    return {group: samples / statements for group, samples in by_group.items()}


def run(before: str | None, statements: int, sql: str, clock: str = "py-spy") -> None:
    if clock == "py-spy" and shutil.which("py-spy") is None:
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
                    "child(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])"
                )
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(REPO)]))
                subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        code,
                        zk.address,
                        SQL[sql],
                        str(statements),
                        str(out),
                        clock,
                    ],
                    env=env,
                    cwd=tempfile.gettempdir(),
                    check=True,
                    timeout=3600,
                )
                found[name] = cpu_per_statement(out, statements, clock)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    counts = {t: {g: v for g, v in f.items() if _is_count(g)} for t, f in found.items()}
    cpu = {t: {g: v for g, v in f.items() if not _is_count(g)} for t, f in found.items()}
    for title, table in (
        (f"Python CPU per locked {sql} (ms, {clock}), sparklock {rev} and now", cpu),
        (f"ZooKeeper requests and events per locked {sql}, sparklock {rev} and now", counts),
    ):
        groups = sorted(
            set(table["before"]) | set(table["after"]), key=lambda g: -table["after"].get(g, 0)
        )
        if not groups:
            continue
        rows = [["all", *(f"{sum(table[t].values()):.2f}" for t in trees)]]
        rows += [[g, *(f"{table[t].get(g, 0):.2f}" for t in trees)] for g in groups]
        common.print_table(
            f"{title}, {statements} statements", ["", f"before ({rev})", "now"], rows
        )


def _is_count(group: str) -> bool:
    return group.startswith(("request ", "watch event"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help=f"the earlier tree (default {LEASE_MERGE}^1)")
    parser.add_argument("--statements", type=int, default=400)
    parser.add_argument("--sql", choices=sorted(SQL), default="select")
    parser.add_argument("--clock", choices=("py-spy", "proc"), default="py-spy")
    args = parser.parse_args()
    run(args.before, args.statements, args.sql, args.clock)


if __name__ == "__main__":
    main()
