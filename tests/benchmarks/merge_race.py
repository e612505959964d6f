"""Concurrent MERGE writers on one table: a table format's own retry loop vs sparklock.

What benchmarks 10 (Delta) and 11 (Iceberg) share: the table shape, the writer threads (a
session each on one driver), the retry loop around a refused commit, the three ways taking
turns per writer count, and the printed table. A format says only what differs: how its
tables are made, which failures are its commit conflicts, and how a session is started.
"""

from __future__ import annotations

import random
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import common

ROWS, FILES, PER_MERGE = 20000, 8, 50
WARMUP_SECONDS = 15.0
WAYS = ("retries", "embedded", "zookeeper")


@dataclass(frozen=True)
class TableFormat:
    """What one benchmark's table format brings."""

    number: int  # the benchmark's number in docs/benchmarks.md
    name: str  # "Delta", "Iceberg"
    using: str  # the CREATE TABLE ... USING name
    table_prefix: str  # where its tables live ("" or "ice.bench.")
    conflict: re.Pattern[str]  # its commit-conflict exceptions (class names or texts)
    missing: str | None  # why it cannot run here (None: it can)
    version: str  # its release, for the heading
    #: the driver's session for ``work`` (a scratch directory)
    start: Callable[[Path], object]


class Cell:
    """One (way, N) run's counts, shared by its writer threads."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.merges = 0
        self.conflicts = 0
        self.wasted_s = 0.0
        self.errors: list[str] = []


def is_conflict(e: BaseException, conflict: re.Pattern[str]) -> bool:
    """A commit conflict: the Java exception's class (pyspark's converted error keeps it as
    ``_origin``; its text may name only the condition), else the text of its message or trace."""
    origin = getattr(e, "_origin", None) or getattr(e, "java_exception", None)
    name = str(origin.getClass().getName()) if origin is not None else ""
    trace = getattr(e, "_stackTrace", None) or getattr(e, "stackTrace", None) or ""
    return conflict.search(f"{name} {e} {trace}") is not None


def way_conf(way: str, zk_address: str, namespace: str) -> dict[str, str]:
    """The session settings of one way (``retries``: sparklock off)."""
    if way == "retries":
        return {"spark.sparklock.enabled": "false"}
    return {
        "spark.sparklock.enabled": "true",
        "spark.sparklock.manager": way,
        "spark.sparklock.zookeeper.quorum": zk_address,
        "spark.sparklock.zookeeper.namespace": namespace,
        # a wait may last as long as N-1 MERGEs: ten minutes of budget
        "spark.sparklock.lock.numRetries": "600",
        "spark.sparklock.lock.retryInterval": "1s",
    }


def writer(spark, table: str, deadline: float, seed: int, cell: Cell, conflict) -> None:
    """MERGE until the deadline; a MERGE whose commit was refused is run again at once."""
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
                if not is_conflict(e, conflict):
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


def run_cell(spark, fmt: TableFormat, way: str, writers: int, seconds: float, zk: str, index: int):
    """A fresh table, ``writers`` threads each with its own session in ``way``, ``seconds``."""
    table = f"{fmt.table_prefix}m_{way}_{writers}_{index}"
    spark.conf.set("spark.sparklock.enabled", "false")
    spark.sql(
        f"CREATE TABLE {table} USING {fmt.using} AS "
        f"SELECT id, CAST(0 AS BIGINT) AS v FROM range(0, {ROWS}, 1, {FILES})"
    )
    sessions = []
    for _ in range(writers):
        s = spark.newSession()
        for k, v in way_conf(way, zk, f"bench_{fmt.using}_merge").items():
            s.conf.set(k, v)
        sessions.append(s)
    cell = Cell()
    deadline = time.time() + seconds
    threads = [
        threading.Thread(
            target=writer, args=(s, table, deadline, i + 1, cell, fmt.conflict), daemon=True
        )
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


def run(fmt: TableFormat, quick: bool = False, seconds: float | None = None, writers=(2, 4, 8)):
    """Every (way, N) cell, the ways taking turns per N; prints the table, returns the counts."""
    if fmt.missing:
        common.note(f"(benchmark {fmt.number} not run: {fmt.missing})")
        return {}
    seconds = seconds or (15.0 if quick else 60.0)
    writers = (2, 4) if quick and writers == (2, 4, 8) else tuple(writers)
    labels = {
        "retries": f"{fmt.name} with retries",
        "embedded": "sparklock embedded",
        "zookeeper": "sparklock ZooKeeper",
    }
    work = Path(tempfile.mkdtemp(prefix=f"bench-{fmt.using}-merge-"))
    results: dict[tuple[str, int], Cell] = {}
    try:
        with common.zookeeper() as zk:
            spark = fmt.start(work)
            try:
                common.note(
                    f"benchmark {fmt.number}: {fmt.name} {fmt.version}, {seconds:g} s per "
                    f"cell, writers {', '.join(map(str, writers))}; threads of one driver, "
                    "a session each"
                )
                # untimed: the JVM's first MERGEs (JIT, the format's caches) would go to cell 1
                run_cell(spark, fmt, "zookeeper", 2, WARMUP_SECONDS, zk.address, 0)
                index = 1
                for turn, n in enumerate(writers):
                    order = WAYS[turn % 3 :] + WAYS[: turn % 3]  # turns: drift hits all
                    for way in order:
                        cell = run_cell(spark, fmt, way, n, seconds, zk.address, index)
                        results[(way, n)] = cell
                        index += 1
                        common.note(
                            f"  {n} writers, {labels[way]}: {cell.merges} MERGEs, "
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
        d = results[("retries", n)]
        row = [n, f"{d.merges * per_min:.1f}", d.conflicts, f"{d.wasted_s:.1f}"]
        for way in WAYS[1:]:
            c = results[(way, n)]
            r = c.merges / d.merges if d.merges else float("nan")
            row += [f"{c.merges * per_min:.1f}", f"{r:.2f}x", f"{c.wasted_s:.1f}"]
        rows.append(row)
    common.print_table(
        f"benchmark {fmt.number}: concurrent MERGE on one {fmt.name} table, {seconds:g} s per cell",
        [
            "writers",
            f"{fmt.name}+retries MERGEs/min",
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
    return {f"{w}/{n}": vars(c) | {"guard": None} for (w, n), c in results.items()}


def main(fmt_of: Callable[[], TableFormat], description: str, argv: list[str] | None) -> None:
    """The benchmark scripts' command line."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="15 s cells, 2 and 4 writers")
    parser.add_argument("--seconds", type=float, help="seconds per cell (60; quick: 15)")
    parser.add_argument("--writers", default="2,4,8", help="writer counts (2,4,8)")
    args = parser.parse_args(argv)
    writers = tuple(int(w) for w in args.writers.split(","))
    run(fmt_of(), args.quick, args.seconds, writers)
