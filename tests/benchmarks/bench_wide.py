"""Benchmark 5: a full read of a table with 10,000 partitions — lock time and znodes created.

A full read locks SHARED on the database, the table and every partition read (Hive's rule). The
sparklock figures start from the statement's facts (as the JVM shim hands them over) and include
the policy (facts -> lock requests); Hive's are its manager's list lock alone, timed inside its
JVM (``HiveLockBench wide``). Znodes created = the server's ``zk_znode_count`` while the locks are
held minus before. Rows: Hive; sparklock on Hive's layout — alone, and beside another reader of
the whole table that holds its locks meanwhile (another process: a client of its own; the object
nodes then stay, and the grant check reads every one of them); sparklock with read escalation
(opt-in, ``spark.sparklock.lock.escalation.partitions=1000`` and ``.reads=true``); the embedded
manager.

    python3 -m tests.benchmarks.bench_wide [--quick]
"""

from __future__ import annotations

import time

from sparklock.config import Escalation
from sparklock.managers.embedded import EmbeddedLockManager
from sparklock.managers.zookeeper import ZooKeeperLockManager
from sparklock.rules.facts import Facts, parse_facts
from sparklock.rules.policy import requests_for

from . import common

PARTITIONS = 10_000
ROUNDS, HIVE_ROUNDS = 5, 1  # Hive takes ~30 s a round
QUICK_ROUNDS, QUICK_HIVE_ROUNDS = 2, 1
ESCALATION = Escalation(partitions=1000, reads=True)


def facts(partitions: int) -> Facts:
    """What the shim reports for ``SELECT * FROM bench.w`` (every partition read)."""
    return parse_facts(
        {
            "command": "Project",
            "currentDatabase": "bench",
            "reads": [
                {
                    "kind": "table",
                    "catalog": "spark_catalog",
                    "database": "bench",
                    "table": "w",
                    "partitionColumns": ["p"],
                    "partitions": [{"p": f"{i:05d}"} for i in range(partitions)],
                }
            ],
        }
    )


def measure(manager, escalation: Escalation, rounds: int, port: int | None) -> dict:
    the_facts = facts(PARTITIONS)
    created = None
    if port is not None:  # one counted round first (the probes would skew a timed one)
        before = common.znodes(port)
        requests = requests_for(the_facts, escalation).requests
        held = manager.acquire(requests, owner="bench", query_id="wide_count")
        created = common.znodes(port) - before
        held.release()
    policy, locks, unlocks = [], [], []
    for i in range(rounds):
        t0 = time.perf_counter()
        requests = requests_for(the_facts, escalation).requests
        t1 = time.perf_counter()
        held = manager.acquire(requests, owner="bench", query_id=f"wide_{i}")
        t2 = time.perf_counter()
        held.release()
        t3 = time.perf_counter()
        policy.append((t1 - t0) * 1000)
        locks.append((t2 - t0) * 1000)
        unlocks.append((t3 - t2) * 1000)
    return {
        "policy": common.median(policy),
        "lock": common.median(locks),
        "unlock": common.median(unlocks),
        "znodes": created,
        "objects": len(held.locks),
    }


def measure_beside_a_reader(manager, zk, rounds: int) -> dict:
    """``measure`` while another process (a client of its own) holds the same full read."""
    other = ZooKeeperLockManager.connect(f"localhost:{zk.port}", "bench_sparklock")
    try:
        requests = requests_for(facts(PARTITIONS), Escalation()).requests
        held = other.acquire(requests, owner="other", query_id="wide_other")
        try:
            return measure(manager, Escalation(), rounds, zk.port)
        finally:
            held.release()
    finally:
        other.close()


def run(quick: bool = False) -> dict:
    rounds, hive_rounds = (QUICK_ROUNDS, QUICK_HIVE_ROUNDS) if quick else (ROUNDS, HIVE_ROUNDS)
    hive = None
    with common.zookeeper() as zk:
        if not common.hive_skipped():
            lines = common.hive_bench("wide", zk.address, "bench_hive", PARTITIONS, hive_rounds)
            hive = {
                "lock": common.median([float(ln[1]) for ln in lines]),
                "unlock": common.median([float(ln[2]) for ln in lines]),
                "znodes": int(lines[0][3]),
                "objects": PARTITIONS + 2,
            }
        with common.sparklock_on(zk) as zkm:
            layout = measure(zkm, Escalation(), rounds, zk.port)
            beside = measure_beside_a_reader(zkm, zk, rounds)
            escalated = measure(zkm, ESCALATION, rounds, zk.port)
    embedded = measure(EmbeddedLockManager(), Escalation(), rounds, None)

    rows = []
    for label, r in (
        ("Hive 2.3.10", hive),
        ("sparklock, Hive layout", layout),
        ("sparklock, Hive layout, beside another reader", beside),
        (f"sparklock, read escalation (> {ESCALATION.partitions} partitions)", escalated),
        ("sparklock embedded", embedded),
    ):
        if r is None:
            rows.append([label, "n/a", "n/a", "", "n/a", "", "n/a", "n/a"])
            continue
        h_lock = hive["lock"] if hive and r is not hive else None
        h_unlock = hive["unlock"] if hive and r is not hive else None
        rows.append(
            [
                label,
                common.fmt_num(r["objects"]),
                common.fmt_ms(r["lock"]),
                common.ratio(h_lock, r["lock"]) if h_lock else "",
                common.fmt_ms(r["unlock"]),
                common.ratio(h_unlock, r["unlock"]) if h_unlock else "",
                "n/a" if r["znodes"] is None else common.fmt_num(r["znodes"]),
                common.fmt_ms(r.get("policy")),
            ]
        )
    common.print_table(
        f"5. Full read of a table with {PARTITIONS:,} partitions (ms, median; "
        "ratio = Hive / sparklock; sparklock lock time includes its policy)",
        [
            "manager",
            "objects locked",
            "lock",
            "ratio",
            "unlock",
            "ratio",
            "znodes created",
            "policy",
        ],
        rows,
    )
    return {
        "hive": hive,
        "sparklock": layout,
        "beside": beside,
        "escalated": escalated,
        "embedded": embedded,
    }


if __name__ == "__main__":
    common.bench_main(run, __doc__)
