"""Load: separate Spark drivers hammer the same tables through one ZooKeeper; a checker proves it.

``SPARKLOCK_STRESS_DRIVERS`` (default 2) driver processes (``tests/support/driver.py``) x
``SPARKLOCK_STRESS_THREADS`` (2) sessions each run a random mix of reads (full, pruned, joins),
static and dynamic inserts, partition overwrites and DDL (SET TBLPROPERTIES, ADD PARTITION,
ANALYZE) over two partitioned tables for ``SPARKLOCK_STRESS_SECONDS`` (20).

The drivers share the tables' *files*: every driver has its own in-memory catalog (separate
drivers do not share a metastore here) in which it registers the same external tables, located in
one shared directory. So the drivers' writers really collide on the same files and
``_temporary`` directories, their readers really list and read files other drivers replace, and
their lock sets collide in the one ZooKeeper namespace as drivers sharing a metastore would.

Session 0 of every driver has a short lock budget (0.2 s) and the others 5 s, so statements both
wait and fail with LOCK_CONFLICT under load.

The lock service of each driver journals (``SPARKLOCK_JOURNAL``) every grant -- after the manager
returned it -- and every release -- before it starts --, stamped with ``time.monotonic_ns()`` (one
clock for every process of the machine). Each journalled interval lies inside the time the lock
really existed, so if any two incompatible holders (same object, one EXCLUSIVE, different
statements) ever overlapped, their journal intervals overlap. The checker also requires: every
grant released; every statement finished, or failed with LOCK_CONFLICT within its budget; zero
other failures -- a Spark write failure, or a read of files a writer replaced (FILE_NOT_EXIST),
is a failure --; and an empty lock tree at the end.
"""

from __future__ import annotations

import json
import os
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support.zk_tree import inspecting, znodes

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper, pytest.mark.load]

DRIVERS = int(os.environ.get("SPARKLOCK_STRESS_DRIVERS", "2"))
THREADS = int(os.environ.get("SPARKLOCK_STRESS_THREADS", "2"))
SECONDS = float(os.environ.get("SPARKLOCK_STRESS_SECONDS", "20"))
NUM_RETRIES, RETRY_INTERVAL_MS = 20, 250  # budget 5 s per statement
SHORT_BUDGET = {  # session 0 of each driver: 0.2 s
    "spark.sparklock.lock.numRetries": "2",
    "spark.sparklock.lock.retryInterval": "100ms",
}
#: What a statement may take beyond its lock budget: analysis, planning, the ZooKeeper round trips.
SLACK_S = 10


def read_jsonl(paths) -> list[dict]:
    out = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out


def check_journal(records: list[dict]) -> tuple[list[tuple], list[str], int]:
    """(overlaps, unreleased handles, intervals checked) of merged journal records."""
    held, released = {}, {}
    for r in records:
        key = (r["pid"], r["handle"])
        if r["ev"] == "held":
            held[key] = r
        elif r["ev"] == "release":
            released[key] = r["t"]
    unreleased = [f"{k[0]}:{k[1]}" for k in held if k not in released]
    by_object: dict[str, list[tuple]] = defaultdict(list)
    for key, r in held.items():
        end = released.get(key, float("inf"))
        # one statement = one owner: nested executions of a root run inside their parents' locks
        owner = (r["pid"], r["session"], r.get("root") or key[1])
        for name, mode in r["locks"]:
            by_object[name].append((r["t"], end, mode, owner, r["sql"]))
    overlaps = []
    count = 0
    for name, intervals in by_object.items():
        intervals.sort()
        count += len(intervals)
        for i, (s1, e1, m1, o1, q1) in enumerate(intervals):
            for s2, _e2, m2, o2, q2 in intervals[i + 1 :]:
                if s2 >= e1:
                    break
                if o1 != o2 and "EXCLUSIVE" in (m1, m2):
                    overlaps.append((name, (m1, q1), (m2, q2), (s2 - s1) / 1e6))
    return overlaps, unreleased, count


def test_checker_finds_an_overlap():
    """The checker is not vacuous: two EXCLUSIVE holders 1 ms apart are reported."""
    recs = [
        {
            "ev": "held",
            "pid": 1,
            "handle": "a",
            "t": 0,
            "session": "s1",
            "root": "1",
            "sql": "a",
            "locks": [["default@t", "EXCLUSIVE"], ["default", "SHARED"]],
        },
        {
            "ev": "held",
            "pid": 2,
            "handle": "b",
            "t": 1_000_000,
            "session": "s2",
            "root": "1",
            "sql": "b",
            "locks": [["default@t", "SHARED"], ["default", "SHARED"]],
        },
        {"ev": "release", "pid": 1, "handle": "a", "t": 2_000_000},
    ]
    overlaps, unreleased, _ = check_journal(recs)
    assert [o[0] for o in overlaps] == ["default@t"]
    assert unreleased == ["2:b"]


def test_stress_no_overlap_no_leak(tmp_path: Path, zk_server, zk_namespace):
    from tests.support.driver import Driver

    journal = tmp_path / "journal"
    conf = {
        "spark.sparklock.lock.numRetries": str(NUM_RETRIES),
        "spark.sparklock.lock.retryInterval": f"{RETRY_INTERVAL_MS}ms",
    }
    drivers = []
    starters = []

    def start(i: int) -> None:
        drivers.append(
            Driver(
                zk_server.address,
                zk_namespace,
                str(tmp_path / f"wh{i}"),
                conf,
                env={"SPARKLOCK_JOURNAL": str(journal)},
            )
        )

    for i in range(DRIVERS):
        starters.append(threading.Thread(target=start, args=(i,)))
        starters[-1].start()
    for s in starters:
        s.join()
    assert len(drivers) == DRIVERS
    try:
        shared = tmp_path / "shared"
        tables = ["s1", "s2"]
        for i, d in enumerate(drivers):  # the first fills the tables, the others find its files
            setup = d.send(
                {"op": "stress_setup", "tables": tables, "location": str(shared), "first": i == 0}
            )
            assert setup == {t: 3 for t in tables}, setup
        summaries = []

        def run(i: int, d) -> None:
            summaries.append(
                d.send(
                    {
                        "op": "stress",
                        "tables": tables,
                        "threads": THREADS,
                        "seconds": SECONDS,
                        "seed": i + 1,
                        "log": str(tmp_path / f"statements-{i}.jsonl"),
                        "short_budget": SHORT_BUDGET,
                    },
                    timeout=SECONDS + 240,
                )
            )

        runners = [threading.Thread(target=run, args=(i, d)) for i, d in enumerate(drivers)]
        for r in runners:
            r.start()
        for r in runners:
            r.join()
        assert len(summaries) == DRIVERS, summaries
        statuses = [d.send({"op": "status"}) for d in drivers]
    finally:
        for d in drivers:
            d.close()

    statements = read_jsonl(sorted(tmp_path.glob("statements-*.jsonl")))
    failed = [s for s in statements if s["outcome"] == "failed"]
    stale = [s for s in failed if "FILE_NOT_EXIST" in (s["error"] or "")]
    conflicts = [s for s in statements if s["outcome"] == "conflict"]
    ok = [s for s in statements if s["outcome"] == "ok"]
    overlaps, unreleased, intervals = check_journal(read_jsonl(sorted(journal.glob("*.jsonl"))))
    slow_conflicts = [s for s in conflicts if (s["end"] - s["start"]) / 1e9 > s["budget"] + SLACK_S]
    waits = sorted((s["end"] - s["start"]) / 1e9 - s["budget"] for s in conflicts)
    with inspecting(zk_server.address) as zk:
        leftovers = list(znodes(zk, "/" + zk_namespace, locks_only=True))
    kinds = defaultdict(int)
    for s in ok:
        kinds[s["kind"]] += 1
    print(
        f"\nstress: {DRIVERS} drivers x {THREADS} threads x {SECONDS:g} s: "
        f"{len(statements)} statements ({len(ok)} ok, {len(conflicts)} LOCK_CONFLICT, "
        f"{len(failed)} failed, of which {len(stale)} reads of replaced files); "
        f"{intervals} lock intervals checked; overlaps {len(overlaps)}; "
        f"unreleased {len(unreleased)}; leftover znodes {len(leftovers)}; "
        f"ok by kind {dict(kinds)}; "
        f"LOCK_CONFLICT came {waits[len(waits) // 2] if waits else 0:.2f} s (median) / "
        f"{waits[-1] if waits else 0:.2f} s (max) after the budget"
    )
    assert failed == [], failed[:5]
    assert overlaps == [], overlaps[:5]
    assert unreleased == [], unreleased[:5]
    assert slow_conflicts == [], slow_conflicts[:5]
    assert conflicts, "no statement ran out of its budget: the LOCK_CONFLICT path was not exercised"
    assert leftovers == []
    assert all(st == {"open": 0, "waiting": 0, "unreleased": []} for st in statuses), statuses
    assert len(ok) >= DRIVERS * THREADS  # it really ran
    writes = [s for s in ok if s["kind"] in ("insert_static", "insert_dynamic", "overwrite")]
    assert writes, "no write succeeded"
