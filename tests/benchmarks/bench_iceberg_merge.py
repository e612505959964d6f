"""Benchmark 11: concurrent MERGE writers on one Iceberg table -- Iceberg with retries vs sparklock.

N writers (2, 4, 8) run ``MERGE INTO t`` for a fixed time (60 s; ``--seconds``), each MERGE
updating 50 random rows of a 20,000-row Iceberg table (copy-on-write, Iceberg's default), so
every MERGE rewrites files another one rewrites too. Three ways, on the same table shape, taking
turns per N, as ``bench_delta_merge`` does for Delta:

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
way keeps the retry loop: an Iceberg MERGE plans its scan (its snapshot) before sparklock's lock
is granted, so one that waited while another committed still fails at commit today
(docs/iceberg.md, "What is not locked").

    python3 -m tests.benchmarks.bench_iceberg_merge [--quick] [--seconds 60] [--writers 2,4,8]

Needs a pyspark line Iceberg builds a runtime for (3.5, 4.0, 4.1: ``tests/versions.py 4.1``).
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
from .bench_delta_merge import PER_MERGE, ROWS, WARMUP_SECONDS, Cell

FILES = 8
MODES = ("iceberg", "embedded", "zookeeper")
LABELS = {
    "iceberg": "Iceberg with retries",
    "embedded": "sparklock embedded",
    "zookeeper": "sparklock ZooKeeper",
}
#: Iceberg's commit failures: the statement did all its work, its commit is refused
CONFLICT = re.compile(
    r"\borg\.apache\.iceberg\.exceptions\.(ValidationException|CommitFailedException)\b"
    r"|Found conflicting files|Cannot commit"
)


def is_conflict(e: BaseException) -> bool:
    """An Iceberg commit failure: its Java class (pyspark keeps the Java exception as
    ``_origin``), else the text of its message or trace."""
    origin = getattr(e, "_origin", None) or getattr(e, "java_exception", None)
    name = str(origin.getClass().getName()) if origin is not None else ""
    trace = getattr(e, "_stackTrace", None) or getattr(e, "stackTrace", None) or ""
    return CONFLICT.search(f"{name} {e} {trace}") is not None


def mode_conf(mode: str, zk_address: str) -> dict[str, str]:
    if mode == "iceberg":
        return {"spark.sparklock.enabled": "false"}
    return {
        "spark.sparklock.enabled": "true",
        "spark.sparklock.manager": mode,
        "spark.sparklock.zookeeper.quorum": zk_address,
        "spark.sparklock.zookeeper.namespace": "bench_iceberg_merge",
        # a wait may last as long as N-1 MERGEs: ten minutes of budget
        "spark.sparklock.lock.numRetries": "600",
        "spark.sparklock.lock.retryInterval": "1s",
    }


def writer(spark, table: str, deadline: float, seed: int, cell: Cell) -> None:
    """MERGE until the deadline; a MERGE whose commit failed is retried at once."""
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
    table = f"ice.bench.m_{mode}_{writers}_{index}"
    spark.conf.set("spark.sparklock.enabled", "false")
    spark.sql(
        f"CREATE TABLE {table} USING iceberg AS "
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
    from tests.support import iceberg

    if iceberg.MISSING:
        common.note(f"(benchmark 11 not run: {iceberg.MISSING})")
        return {}
    seconds = seconds or (15.0 if quick else 60.0)
    writers = (2, 4) if quick and writers == (2, 4, 8) else tuple(writers)
    work = Path(tempfile.mkdtemp(prefix="bench-iceberg-merge-"))
    results: dict[tuple[str, int], Cell] = {}
    try:
        with common.zookeeper() as zk:
            # each session's catalog would serve its cached (stale) table for 30 s
            fresh = {"spark.sql.catalog.ice.cache-enabled": "false"}
            spark = iceberg.iceberg_session("bench-iceberg-merge", work, **fresh)
            spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.bench")
            try:
                runtime = iceberg.RUNTIME.version if iceberg.RUNTIME else "?"
                common.note(
                    f"benchmark 11: Iceberg {runtime}, {seconds:g} s per cell, writers "
                    f"{', '.join(map(str, writers))}; threads of one driver, a session each"
                )
                # untimed: the JVM's first MERGEs (JIT, Iceberg's caches) would go to the first cell
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
        d = results[("iceberg", n)]
        row = [n, f"{d.merges * per_min:.1f}", d.conflicts, f"{d.wasted_s:.1f}"]
        for mode in MODES[1:]:
            c = results[(mode, n)]
            r = c.merges / d.merges if d.merges else float("nan")
            row += [f"{c.merges * per_min:.1f}", f"{r:.2f}x", f"{c.wasted_s:.1f}"]
        rows.append(row)
    common.print_table(
        f"benchmark 11: concurrent MERGE on one Iceberg table, {seconds:g} s per cell",
        [
            "writers",
            "Iceberg+retries MERGEs/min",
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
