"""Benchmark 3: lock+unlock cycles per second from one driver, and its ZooKeeper connections.

A cycle is one read statement's lock set — SHARED on the database, the table and one partition —
acquired and released. 1, 8 and 32 threads, on disjoint objects (a table per thread) and on shared
ones (every thread the same partition). sparklock's threads share the process's one manager (and
so its one ZooKeeper connection); Hive's have a manager each, as HiveServer2 sessions do, sharing
Hive's one Curator client (``HiveLockBench throughput``; Hive's retry sleep set to 100 ms, so that
its create/delete races on shared object nodes cost a short sleep rather than its default 60 s).
ZooKeeper connections are counted by the server (``cons``) in the middle of each run. Medians of
rounds that alternate between Hive and sparklock (each configuration once per round), the ratio
the median of the rounds' own ratios: the machine's other load drifts, and weighs on both alike.

    python3 -m tests.benchmarks.bench_throughput [--quick]
"""

from __future__ import annotations

import threading
import time

from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.embedded import EmbeddedLockManager
from sparklock.managers.zookeeper import ZooKeeperLockManager

from . import common

THREADS = (1, 8, 32)
SHARINGS = ("disjoint", "shared")
SECONDS, REPEATS = 1.0, 5
QUICK_SECONDS, QUICK_REPEATS = 0.6, 1
HIVE_SLEEP_MS = 100


def cycles_per_second(manager, threads: int, sharing: str, seconds: float, server=None):
    """One run: (cycles/s, ZooKeeper connections seen mid-run or None)."""
    stop = threading.Event()
    start = threading.Barrier(threads + 1)
    counts = [0] * threads
    errors: list[BaseException] = []

    def work(t: int) -> None:
        table = "s" if sharing == "shared" else f"d{t}"
        partition = LockObject.of_partition("bench", table, {"p": "1"})
        request = [LockRequest(partition, LockMode.SHARED)]
        start.wait()
        i = 0
        try:
            while not stop.is_set():
                held = manager.acquire(request, owner=f"thread{t}", query_id=f"tput_{t}_{i}")
                held.release()
                i += 1
                counts[t] = i
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    t0 = time.perf_counter()
    time.sleep(seconds / 2)
    connections = server.connection_count() if server is not None else None
    time.sleep(seconds / 2)
    done = sum(counts)
    elapsed = time.perf_counter() - t0
    stop.set()
    for w in workers:
        w.join(60)
    if errors:
        raise errors[0]
    return done / elapsed, connections


def measure(manager, seconds, repeats, server=None) -> dict:
    out = {}
    for sharing in SHARINGS:
        for threads in THREADS:
            runs = [
                cycles_per_second(manager, threads, sharing, seconds, server)
                for _ in range(repeats)
            ]
            conns = [c for _, c in runs if c is not None]
            out[sharing, threads] = (
                common.median([r for r, _ in runs]),
                max(conns) if conns else None,
            )
    return out


def hive_round(address: str, seconds: float) -> dict:
    """One round of Hive's side (every configuration once, in its own warmed-up JVM)."""
    lines = common.hive_bench(
        "throughput", address, "bench_hive", ",".join(map(str, THREADS)), seconds, 1, HIVE_SLEEP_MS
    )
    out = {}
    for sharing in SHARINGS:
        for threads in THREADS:
            mine = [ln for ln in lines if ln[1] == sharing and int(ln[2]) == threads]
            out[sharing, threads] = (float(mine[0][3]), int(mine[0][4]))
    return out


def run(quick: bool = False) -> dict:
    """Rounds alternate between Hive and sparklock (each configuration once per round), so that
    the machine's other load, which drifts over a minute, weighs on both sides alike."""
    seconds, repeats = (QUICK_SECONDS, QUICK_REPEATS) if quick else (SECONDS, REPEATS)
    hive_rounds: list[dict] = []
    our_rounds: list[dict] = []
    with common.zookeeper() as zk:
        skipped = common.hive_skipped()
        for k in range(repeats):
            if not skipped:
                hive_rounds.append(hive_round(zk.address, seconds))
            # connected only for its own rounds: the server's connection count is each side's
            with ZooKeeperLockManager.connect(zk.address, "bench_sparklock") as zkm:
                common.warm_up(zkm, common.WARMUP_SECONDS if k == 0 else 0.5)
                our_rounds.append(measure(zkm, seconds, 1, zk))
    embedded = measure(EmbeddedLockManager(), seconds / 2, repeats)
    hive, ours, ratios = {}, {}, {}
    for key in ((s, t) for s in SHARINGS for t in THREADS):
        ours[key] = (
            common.median([r[key][0] for r in our_rounds]),
            max(r[key][1] for r in our_rounds),
        )
        if hive_rounds:
            hive[key] = (
                common.median([r[key][0] for r in hive_rounds]),
                max(r[key][1] for r in hive_rounds),
            )
            ratios[key] = common.median(
                [
                    o[key][0] / h[key][0]
                    for o, h in zip(our_rounds, hive_rounds, strict=True)
                    if h[key][0] > 0  # a round in which Hive did not finish one cycle: no ratio
                ]
            )

    rows = []
    for sharing in SHARINGS:
        for threads in THREADS:
            h_cps, h_conns = hive.get((sharing, threads), (None, None))
            o_cps, o_conns = ours[sharing, threads]
            r = ratios.get((sharing, threads))
            rows.append(
                [
                    sharing,
                    threads,
                    common.fmt_num(h_cps),
                    common.fmt_num(o_cps),
                    common.ratio(1.0, r, higher_is_better=True),
                    "n/a" if h_conns is None else h_conns,
                    o_conns,
                    common.fmt_num(embedded[sharing, threads][0]),
                ]
            )
    common.print_table(
        "3. Throughput: lock+unlock cycles/s of db S + table S + partition S from one driver "
        "(median of rounds alternating Hive and sparklock; ratio = median of the rounds' "
        "sparklock / Hive)",
        [
            "objects",
            "threads",
            "Hive",
            "sparklock (ZooKeeper)",
            "ratio",
            "Hive ZK connections",
            "sparklock ZK connections",
            "embedded",
        ],
        rows,
    )
    return {"hive": hive, "sparklock": ours, "embedded": embedded, "ratios": ratios}


if __name__ == "__main__":
    common.bench_main(run, __doc__)
