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

import argparse
import random
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

from . import common

ROWS, FILES, PER_MERGE = 20000, 8, 50
WARMUP_SECONDS = 15.0
MODES = ("delta", "embedded", "zookeeper")
LABELS = {
    "delta": "Delta with retries",
    "embedded": "sparklock embedded",
    "zookeeper": "sparklock ZooKeeper",
}
CONFLICT = re.compile(
    r"\b(?:io\.delta\.exceptions|org\.apache\.spark\.sql\.delta)\."
    r"(Concurrent\w*Exception|MetadataChangedException|ProtocolChangedException)\b"
)


def is_conflict(e: BaseException) -> bool:
    """A Delta commit conflict: its Java class (pyspark's converted error keeps the Java
    exception as ``_origin``; its text names only the condition), else the text of a trace."""
    origin = getattr(e, "_origin", None) or getattr(e, "java_exception", None)
    name = str(origin.getClass().getName()) if origin is not None else ""
    trace = getattr(e, "_stackTrace", None) or getattr(e, "stackTrace", None) or ""
    return CONFLICT.search(f"{name} {e} {trace}") is not None


def mode_conf(mode: str, zk_address: str) -> dict[str, str]:
    if mode == "delta":
        return {"spark.sparklock.enabled": "false"}
    return {
        "spark.sparklock.enabled": "true",
        "spark.sparklock.manager": mode,
        "spark.sparklock.zookeeper.quorum": zk_address,
        "spark.sparklock.zookeeper.namespace": "bench_delta_merge",
        # a wait may last as long as N-1 MERGEs: ten minutes of budget
        "spark.sparklock.lock.numRetries": "600",
        "spark.sparklock.lock.retryInterval": "1s",
    }


class Cell:
    """One (mode, N) run's counts, shared by its writer threads."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.merges = 0
        self.conflicts = 0
        self.wasted_s = 0.0
        self.errors: list[str] = []


def writer(spark, table: str, deadline: float, seed: int, cell: Cell) -> None:
    """MERGE until the deadline; a conflicting MERGE is retried at once (Delta's remedy)."""
    rng = random.Random(seed)
    while time.time() < deadline:
        ids = ", ".join(str(i) for i in rng.sample(range(ROWS), PER_MERGE))
        sql = (
            f"MERGE INTO {table} AS t USING (SELECT explode(array({ids})) AS id) s "
            "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = t.v + 1"
        )
        while True:  # the retry loop: the same MERGE until it commits
            started = time.monotonic()
            try:
                spark.sql(sql).collect()
            except Exception as e:  # noqa: BLE001 - a conflict is counted and retried
                elapsed = time.monotonic() - started
                if not is_conflict(e):
                    with cell.guard:
                        cell.errors.append(str(e).split("\n", 1)[0][:300])
                    return
                with cell.guard:
                    if time.time() <= deadline:
                        cell.conflicts += 1
                        cell.wasted_s += elapsed
                if time.time() > deadline:
                    return
                continue
            with cell.guard:
                if time.time() <= deadline:
                    cell.merges += 1
            break


def run_cell(spark, mode: str, writers: int, seconds: float, zk_address: str, index: int) -> Cell:
    """A fresh table, ``writers`` threads each with its own session in ``mode``, ``seconds``."""
    table = f"m_{mode}_{writers}_{index}"
    spark.conf.set("spark.sparklock.enabled", "false")
    spark.sql(
        f"CREATE TABLE {table} USING delta AS "
        f"SELECT id, CAST(0 AS BIGINT) AS v FROM range(0, {ROWS}, 1, {FILES})"
    )
    sessions = []
    for _ in range(writers):
        s = spark.newSession()
        for k, v in mode_conf(mode, zk_address).items():
            s.conf.set(k, v)
        sessions.append(s)
    cell = Cell()
    deadline = time.time() + seconds
    threads = [
        threading.Thread(target=writer, args=(s, table, deadline, i + 1, cell), daemon=True)
        for i, s in enumerate(sessions)
    ]
    for t in threads:
        t.start()
    for t in threads:  # MERGEs in flight at the deadline finish (not counted)
        t.join()
    [(total,)] = spark.sql(f"SELECT sum(v) FROM {table}").collect()
    # every committed MERGE added PER_MERGE; counted ones are a subset of those
    assert total >= cell.merges * PER_MERGE, (table, total, cell.merges)
    return cell


def run(quick: bool = False, seconds: float | None = None, writers=(2, 4, 8)) -> dict:
    from tests.support import delta

    if delta.MISSING:
        common.note(f"(benchmark 10 not run: {delta.MISSING})")
        return {}
    seconds = seconds or (15.0 if quick else 60.0)
    writers = (2, 4) if quick and writers == (2, 4, 8) else tuple(writers)
    work = Path(tempfile.mkdtemp(prefix="bench-delta-merge-"))
    results: dict[tuple[str, int], Cell] = {}
    try:
        with common.zookeeper() as zk:
            spark = delta.delta_session("bench-delta-merge", work / "warehouse")
            try:
                common.note(
                    f"benchmark 10: Delta {delta.VERSION}, {seconds:g} s per cell, writers "
                    f"{', '.join(map(str, writers))}; threads of one driver, a session each"
                )
                # untimed: the JVM's first MERGEs (JIT, Delta's caches) would go to the first cell
                run_cell(spark, "zookeeper", 2, WARMUP_SECONDS, zk.address, 0)
                index = 1
                for turn, n in enumerate(writers):
                    order = MODES[turn % 3 :] + MODES[: turn % 3]  # turns: drift hits all
                    for mode in order:
                        cell = run_cell(spark, mode, n, seconds, zk.address, index)
                        results[(mode, n)] = cell
                        index += 1
                        common.note(
                            f"  {n} writers, {LABELS[mode]}: {cell.merges} MERGEs, "
                            f"{cell.conflicts} conflicts, {cell.wasted_s:.1f} s wasted"
                            + (f", errors: {cell.errors[:2]}" if cell.errors else "")
                        )
            finally:
                spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_min = 60.0 / seconds
    rows = []
    for n in writers:
        d = results[("delta", n)]
        row = [n, f"{d.merges * per_min:.1f}", d.conflicts, f"{d.wasted_s:.1f}"]
        for mode in MODES[1:]:
            c = results[(mode, n)]
            r = c.merges / d.merges if d.merges else float("nan")
            row += [f"{c.merges * per_min:.1f}", f"{r:.2f}x", f"{c.wasted_s:.1f}"]
        rows.append(row)
    common.print_table(
        f"benchmark 10: concurrent MERGE on one Delta table, {seconds:g} s per cell",
        [
            "writers",
            "Delta+retries MERGEs/min",
            "conflicts",
            "wasted s",
            "embedded MERGEs/min",
            "ratio",
            "wasted s",
            "ZooKeeper MERGEs/min",
            "ratio",
            "wasted s",
        ],
        rows,
    )
    return {f"{m}/{n}": vars(c) | {"guard": None} for (m, n), c in results.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="15 s cells, 2 and 4 writers")
    parser.add_argument("--seconds", type=float, help="seconds per cell (60; quick: 15)")
    parser.add_argument("--writers", default="2,4,8", help="writer counts (2,4,8)")
    args = parser.parse_args(argv)
    writers = tuple(int(w) for w in args.writers.split(","))
    run(args.quick, args.seconds, writers)


if __name__ == "__main__":
    main()
