"""Shared plumbing of the benchmarks: a ZooKeeper of their own, request counters, the Hive side.

Everything stays on 127.0.0.1: the ZooKeeper server comes from the pyspark jars
(``tests.support.zookeeper``), and Hive's real ZooKeeperHiveLockManager is timed inside its own JVM
by ``HiveLockBench.java`` (compiled once with the interop harness's compile helper), so that no
protocol round trip is counted on Hive's side.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from sparklock.managers.zookeeper import ZooKeeperLockManager
from tests.support.hive_harness import JVM_OPTIONS, build_harness, missing_requirements
from tests.support.zk_requests import mntr
from tests.support.zookeeper import CLASSPATH, ZooKeeperServer

HERE = Path(__file__).resolve().parent
BENCH_SOURCE = HERE / "HiveLockBench.java"
BENCH_CLASS = "HiveLockBench"
# The bench runs Hive's code hot for a while: full JIT (the interop harness limits it to C1).
BENCH_JVM_OPTIONS = [o for o in JVM_OPTIONS if not o.startswith("-XX:TieredStopAtLevel")]
BENCH_JVM_OPTIONS = [o if not o.startswith("-Xmx") else "-Xmx512m" for o in BENCH_JVM_OPTIONS]
# Seconds of untimed lock/unlock cycles the Hive bench runs first, so that Hive is timed with its
# JIT warm (sparklock's Python needs no such warm-up beyond the rounds each benchmark skips).
WARMUP_SECONDS = 3.0


# -- ZooKeeper -----------------------------------------------------------------------------------
@contextlib.contextmanager
def zookeeper() -> Iterator[ZooKeeperServer]:
    """A fresh standalone ZooKeeper on a free loopback port, stopped on exit."""
    server = ZooKeeperServer(max_session_timeout_ms=120000)
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


def znodes(port: int) -> int:
    return int(mntr(port)["zk_znode_count"])


# -- the Hive side -------------------------------------------------------------------------------
def hive_unavailable() -> str | None:
    """Why Hive's manager cannot be benchmarked here (its columns then read n/a), or None."""
    return missing_requirements()


_bench_dir: Path | None = None


def hive_skipped() -> str | None:
    """Why Hive's side is not measured here (said once, as a note), or None when it is."""
    why = hive_unavailable()
    if why:
        note(f"(Hive's manager not measured: {why})")
    return why


def hive_bench(command: str, address: str, namespace: str, *args: object, timeout: float = 240):
    """Run one HiveLockBench command; returns its result lines split into words (DONE dropped)."""
    global _bench_dir
    if _bench_dir is None:
        _bench_dir = build_harness(source=BENCH_SOURCE, main_class=BENCH_CLASS)
    cmd = [
        "java",
        *BENCH_JVM_OPTIONS,
        f"-Dbench.warmup={WARMUP_SECONDS}",
        "-cp",
        f"{_bench_dir}{os.pathsep}{CLASSPATH}",
        BENCH_CLASS,
        command,
        address,
        namespace,
        *(str(a) for a in args),
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, start_new_session=True
    )
    lines = [ln.split() for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines or lines[-1] != ["DONE"]:
        tail = "\n".join(proc.stderr.splitlines()[-30:])
        raise RuntimeError(f"HiveLockBench {command} failed (exit {proc.returncode}):\n{tail}")
    return lines[:-1]


def warm_up(manager, seconds: float = WARMUP_SECONDS, width: int = 100) -> None:
    """Untimed lock/unlock cycles (small sets, every tenth of ``width`` partitions), as Hive gets:
    the ZooKeeper server's JIT sees multi requests and kazoo its first connection before timing
    (a fresh server takes ~20 wide statements to settle: 100-400 ms each, then ~40 ms)."""
    from sparklock.locks.model import LockMode, LockRequest
    from sparklock.locks.objects import LockObject

    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        n = width if i % 10 == 9 else 3
        requests = [
            LockRequest(LockObject.of_partition("bench", "warm", {"p": str(k)}), LockMode.EXCLUSIVE)
            for k in range(n)
        ]
        manager.acquire(requests, owner="warmup", query_id=f"warmup_{i}").release()
        i += 1


def warm_server(zk: ZooKeeperServer, width: int = 100) -> None:
    """Warm a benchmark's ZooKeeper server up (``warm_up``) on a connection of its own, closed
    after: for benchmarks whose timed client is a Spark session, not a manager of theirs."""
    with ZooKeeperLockManager.connect(zk.address, "bench_warmup") as manager:
        warm_up(manager, width=width)


# -- figures and tables --------------------------------------------------------------------------
@contextlib.contextmanager
def sparklock_on(zk: ZooKeeperServer) -> Iterator[ZooKeeperLockManager]:
    """sparklock's ZooKeeper manager on the benchmark's server, warmed up like Hive's side."""
    with ZooKeeperLockManager.connect(zk.address, "bench_sparklock") as manager:
        warm_up(manager)
        yield manager


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def median_ci(values: Sequence[float], z: float = 1.96) -> tuple[float, float, float]:
    """The median and its ~95 % confidence interval, from order statistics alone.

    Why: a 25-100 ms Spark statement on two shared cores varies by +-20 % from one run to the
    next (the JVM's JIT compiler keeps burning a core for hundreds of statements), so the median
    of 30 paired ratios wanders by +-10 % even when both sides run the same thing. A ratio
    printed without its interval cannot say whether a 1.05 or 1.10 target holds. The interval
    is distribution-free: the ranks n/2 -+ z*sqrt(n)/2 of the sorted values (the binomial
    interval for the median), so no assumption about the shape of Spark's noise is made.
    """
    xs = sorted(values)
    n = len(xs)
    if not n:
        return float("nan"), float("nan"), float("nan")
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half))
    return statistics.median(xs), xs[lo], xs[hi]


def fmt_ratio_ci(mid: float, lo: float, hi: float) -> str:
    """``1.031 (1.012-1.050)``: a median ratio with its ~95 % interval, as :func:`median_ci`
    returns them."""
    return f"{mid:.3f} ({lo:.3f}-{hi:.3f})"


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    """``fn()`` and its wall time in milliseconds."""
    t0 = time.perf_counter()
    result = fn()
    return result, (time.perf_counter() - t0) * 1000.0


def fmt_ms(ms: float | None) -> str:
    if ms is None or ms != ms:
        return "n/a"
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    return f"{ms:.2f}"


def fmt_num(x: float | None, digits: int = 0) -> str:
    if x is None or x != x:
        return "n/a"
    return f"{x:,.{digits}f}"


def ratio(hive: float | None, ours: float | None, higher_is_better: bool = False) -> str:
    """How many times better sparklock is (``12.3x``); below 1 means slower."""
    if not hive or not ours or hive != hive or ours != ours:
        return "n/a"
    r = ours / hive if higher_is_better else hive / ours
    return f"{r:.1f}x" if r < 100 else f"{r:.0f}x"


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A Markdown table (so the output can be pasted into a note as is)."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    print(f"\n### {title}\n")
    print(line(cells[0]))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells[1:]:
        print(line(row))
    sys.stdout.flush()


def note(text: str) -> None:
    print(text)
    sys.stdout.flush()


def bench_main(run, doc: str, argv: list[str] | None = None) -> None:
    """The command line every benchmark script shares: ``--quick`` for fewer rounds."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    run(parser.parse_args(argv).quick)
