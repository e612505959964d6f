"""Benchmark 2: handoff latency — a writer waiting behind a reader gets the lock how soon?

A reader holds SHARED on a table (and its database); a writer asks for EXCLUSIVE on the table and
waits; the reader releases at a random moment. Handoff = time from the reader's release call to the
writer's grant. Hive's writer polls (release everything, sleep ``hive.lock.sleep.between.retries``,
retry: its handoff is spread over the sleep; Hive's default sleep is 60 s); sparklock's ``retry``
policy does the same with ``spark.sparklock.lock.retryInterval``; its ``queue`` policy waits on a
ZooKeeper watch of the one lock ahead and is woken by a single notification. Medians of repeated
rounds, Hive timed inside its JVM (``HiveLockBench handoff``).

    python3 -m tests.benchmarks.bench_handoff [--quick]
"""

from __future__ import annotations

import random
import threading
import time

from sparklock.config import LockSettings
from sparklock.locks.model import LockMode, LockRequest, WaitPolicy
from sparklock.locks.objects import LockObject
from sparklock.managers.embedded import EmbeddedLockManager

from . import common

SLEEPS_MS = (100, 1000)
ROUNDS = {100: 20, 1000: 10}
QUICK_ROUNDS = {100: 8, 1000: 4}
QUEUE_ROUNDS = 30
TABLE = LockObject.of_table("bench", "h")


def handoffs(manager, settings: LockSettings, rounds: int, sleep_s: float) -> list[float]:
    """Handoff ms of ``rounds`` reader → writer handovers on ``manager``."""
    rng = random.Random(42)
    out = []
    for i in range(rounds):
        reader = manager.acquire(
            [LockRequest(TABLE, LockMode.SHARED)], owner="reader", query_id=f"reader_{i}"
        )
        granted: list[float] = []
        started = threading.Event()

        def write(i=i, granted=granted, started=started) -> None:
            started.set()
            held = manager.acquire(
                [LockRequest(TABLE, LockMode.EXCLUSIVE)],
                owner="writer",
                query_id=f"writer_{i}",
                settings=settings,
            )
            granted.append(time.perf_counter())
            held.release()

        writer = threading.Thread(target=write)
        writer.start()
        started.wait()
        # Let the writer fail (or queue) first, then release at a random point of its sleep.
        time.sleep(0.03 + rng.random() * sleep_s)
        t0 = time.perf_counter()
        reader.release()
        writer.join(60)
        out.append((granted[0] - t0) * 1000.0)
    return out


def run(quick: bool = False) -> dict:
    rounds = QUICK_ROUNDS if quick else ROUNDS
    queue_rounds = QUEUE_ROUNDS // 3 if quick else QUEUE_ROUNDS
    results: dict = {"hive": {}, "retry": {}}
    with common.zookeeper() as zk:
        why = common.hive_skipped()
        for sleep_ms in SLEEPS_MS:
            if not why:
                lines = common.hive_bench(
                    "handoff", zk.address, "bench_hive", rounds[sleep_ms], sleep_ms
                )
                results["hive"][sleep_ms] = common.median([float(ln[1]) for ln in lines])
        with common.sparklock_on(zk) as zkm:
            for sleep_ms in SLEEPS_MS:
                retry = LockSettings(
                    num_retries=100_000,
                    retry_interval=sleep_ms / 1000,
                    wait_policy=WaitPolicy.RETRY,
                )
                results["retry"][sleep_ms] = common.median(
                    handoffs(zkm, retry, rounds[sleep_ms], sleep_ms / 1000)
                )
            queue = LockSettings(num_retries=600, retry_interval=1.0, wait_policy=WaitPolicy.QUEUE)
            results["queue"] = common.median(handoffs(zkm, queue, queue_rounds, 0.1))
    results["embedded"] = common.median(handoffs(EmbeddedLockManager(), queue, queue_rounds, 0.1))

    rows = []
    for sleep_ms in SLEEPS_MS:
        hive = results["hive"].get(sleep_ms)
        retry = results["retry"][sleep_ms]
        rows.append(
            [
                f"{sleep_ms} ms",
                common.fmt_ms(hive),
                common.fmt_ms(retry),
                common.ratio(hive, retry),
                common.fmt_ms(results["queue"]),
                common.ratio(hive, results["queue"]),
                common.fmt_ms(results["embedded"]),
            ]
        )
    common.print_table(
        "2. Handoff: reader's release call -> waiting writer's grant (ms, median; "
        "ratio = Hive / sparklock; Hive's default retry sleep is 60 s)",
        [
            "retry sleep (Hive) / retryInterval",
            "Hive",
            "sparklock retry",
            "ratio",
            "sparklock queue (ZooKeeper)",
            "ratio",
            "embedded queue",
        ],
        rows,
    )
    return results


if __name__ == "__main__":
    common.bench_main(run, __doc__)
