"""Benchmark 1: acquire + release latency of one statement's lock set, and its ZooKeeper requests.

The lock set is Hive's for a write of N partitions: SHARED on the database and the table,
EXCLUSIVE on N partitions (as in Hive's reference figures in /work/shared/notes/hive-locking.md).
Hive's manager is timed inside its JVM (``HiveLockBench latency``), sparklock's ZooKeeper manager
in this process, each on its own namespace of one fresh ZooKeeper. Medians of repeated rounds;
requests are the server's ``zk_packets_received`` delta of one extra round.

Rows besides the Hive-compatible ones: sparklock with write escalation (opt-in, see README:
EXCLUSIVE on the table beyond 100 partitions, still Hive-compatible) and the embedded manager.

    python3 -m tests.benchmarks.bench_latency [--quick]
"""

from __future__ import annotations

import functools

from sparklock.config import Escalation
from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.embedded import EmbeddedLockManager
from sparklock.rules.policy import escalate
from tests.support.zk_requests import counted

from . import common

SIZES = (1, 10, 100, 1000)
ROUNDS = {1: 30, 10: 20, 100: 10, 1000: 5}
QUICK_ROUNDS = {1: 10, 10: 5, 100: 3, 1000: 2}
WARMUP = 1  # untimed rounds per N (both sides warmed up before: 3 s of lock/unlock cycles)
# Writes only: EXCLUSIVE on the table for more than 100 partitions, which is Hive-compatible (read
# escalation, which needs every writer to be sparklock, is in bench_wide).
ESCALATION = Escalation(partitions=100)


def statement(n: int, table: str = "t") -> list[LockRequest]:
    """What a statement writing N partitions asks for (ancestors are added by the manager)."""
    requests = [LockRequest(LockObject.of_table("bench", table), LockMode.SHARED)]
    requests += [
        LockRequest(LockObject.of_partition("bench", table, {"p": f"{i:05d}"}), LockMode.EXCLUSIVE)
        for i in range(n)
    ]
    return requests


def measure(manager, requests_of, sizes, rounds, port=None) -> dict[int, dict[str, float]]:
    """Median lock / unlock ms per N (and requests per statement when ``port`` is given)."""
    out: dict[int, dict[str, float]] = {}
    for n in sizes:
        locks, unlocks = [], []
        for i in range(WARMUP + rounds[n]):
            acquire = functools.partial(
                manager.acquire, requests_of(n), owner="bench", query_id=f"q{n}_{i}"
            )
            held, t_lock = common.timed(acquire)
            _, t_unlock = common.timed(held.release)
            if i >= WARMUP:
                locks.append(t_lock)
                unlocks.append(t_unlock)
        row = {
            "lock": common.median(locks),
            "unlock": common.median(unlocks),
            "objects": len(held.locks),
        }
        if port is not None:
            acquire = functools.partial(
                manager.acquire, requests_of(n), owner="bench", query_id=f"count{n}"
            )
            held, row["lock_req"] = counted(port, acquire)
            _, row["unlock_req"] = counted(port, held.release)
        out[n] = row
    return out


def measure_hive(address: str, sizes, rounds) -> dict[int, dict[str, float]] | None:
    if common.hive_skipped():
        return None
    lines = common.hive_bench(
        "latency",
        address,
        "bench_hive",
        ",".join(str(n) for n in sizes),
        ",".join(str(rounds[n]) for n in sizes),
        WARMUP,
    )
    out: dict[int, dict[str, float]] = {}
    for n in sizes:
        lat = [ln for ln in lines if ln[0] == "LAT" and int(ln[1]) == n]
        req = next(ln for ln in lines if ln[0] == "REQ" and int(ln[1]) == n)
        out[n] = {
            "lock": common.median([float(ln[2]) for ln in lat]),
            "unlock": common.median([float(ln[3]) for ln in lat]),
            "lock_req": int(req[2]),
            "unlock_req": int(req[3]),
        }
    return out


def run(quick: bool = False) -> dict:
    rounds = QUICK_ROUNDS if quick else ROUNDS
    with common.zookeeper() as zk:
        hive = measure_hive(zk.address, SIZES, rounds)
        with common.sparklock_on(zk) as zkm:
            ours = measure(zkm, statement, SIZES, rounds, zk.port)
            escalated = measure(
                zkm, lambda n: escalate(statement(n), ESCALATION), SIZES, rounds, zk.port
            )
    embedded = measure(EmbeddedLockManager(), statement, SIZES, rounds)

    def h(n, key):
        return hive[n][key] if hive else None

    rows = []
    for n in SIZES:
        o = ours[n]
        rows.append(
            [
                n,
                common.fmt_ms(h(n, "lock")),
                common.fmt_ms(o["lock"]),
                common.ratio(h(n, "lock"), o["lock"]),
                common.fmt_ms(h(n, "unlock")),
                common.fmt_ms(o["unlock"]),
                common.ratio(h(n, "unlock"), o["unlock"]),
                f"{h(n, 'lock_req') if hive else 'n/a'} / {h(n, 'unlock_req') if hive else 'n/a'}",
                f"{o['lock_req']} / {o['unlock_req']}",
            ]
        )
    common.print_table(
        "1. Lock-set latency, Hive-compatible layout (db S + table S + N partitions X; ms, "
        "median; ratio = Hive / sparklock)",
        [
            "N",
            "Hive lock",
            "sparklock lock",
            "ratio",
            "Hive unlock",
            "sparklock unlock",
            "ratio",
            "Hive ZK req lock/unlock",
            "sparklock ZK req lock/unlock",
        ],
        rows,
    )
    rows = []
    for n in SIZES:
        e, m = escalated[n], embedded[n]
        rows.append(
            [
                n,
                e["objects"],
                common.fmt_ms(e["lock"]),
                common.ratio(h(n, "lock"), e["lock"]),
                common.fmt_ms(e["unlock"]),
                common.ratio(h(n, "unlock"), e["unlock"]),
                f"{e['lock_req']} / {e['unlock_req']}",
                common.fmt_ms(m["lock"]),
                common.fmt_ms(m["unlock"]),
            ]
        )
    common.print_table(
        f"1b. Same statements with write escalation (ZooKeeper, Hive-compatible, "
        f"spark.sparklock.lock.escalation.partitions={ESCALATION.partitions}) and on the "
        "embedded manager (ms, median; ratio = Hive / sparklock)",
        [
            "N",
            "objects locked (escalated)",
            "escalated lock",
            "ratio",
            "escalated unlock",
            "ratio",
            "ZK req lock/unlock",
            "embedded lock",
            "embedded unlock",
        ],
        rows,
    )
    return {"hive": hive, "sparklock": ours, "escalated": escalated, "embedded": embedded}


if __name__ == "__main__":
    common.bench_main(run, __doc__)
