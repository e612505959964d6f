"""Benchmark 4c: what the JVM-enforced lease costs a statement — before and after, in one run.

The lease adds no ZooKeeper request per statement (Python renews it from what kazoo already
hears); what a statement pays is the bind/unbind at grant and release, the lease check in the job
commit, and the commit protocol that stages each job apart (``LeaseCommitProtocol``, commit
algorithm 1). This benchmark measures the pruned read and the partitioned INSERT of benchmark 4,
locked on ZooKeeper against unlocked, with sparklock as it was just before the lease (a tree
exported from git: ``--before``, default the first parent of the commit that merged the lease)
and as it is now: each in driver processes of its own, against one ZooKeeper server, in
mirrored blocks (before, after, after, before) so drift hits both alike. Each process imports
its tree's ``sparklock`` (whose shim jar it compiles and caches from that tree's sources) and
this tree's benchmark harness (``bench_spark.measure``).

    python3 -m tests.benchmarks.bench_lease_cost [--quick] [--rounds N] [--before REV]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import common

REPO = Path(__file__).resolve().parents[2]
#: the merge that brought the lease; its first parent is sparklock without it
LEASE_MERGE = "650ec9c"
STATEMENTS = {
    "pruned SELECT (1 of 24 partitions)": "SELECT count(*), sum(v) FROM src WHERE ds = 'd07'",
    "partitioned INSERT": (
        "INSERT OVERWRITE TABLE dst PARTITION (ds = 'x') SELECT id, v FROM src WHERE ds = 'd03'"
    ),
}
ROUNDS = 150  # per block; two blocks per tree
QUICK_ROUNDS = 8
MODES = ("unlocked", "zookeeper")


def export_tree(rev: str, into: Path) -> Path:
    """``sparklock/`` and ``jvm-shim/`` of ``rev``, the way a checkout has them."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", rev, "sparklock", "jvm-shim"],
        check=True,
        capture_output=True,
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def child(zk_address: str, namespace: str, rounds: int) -> None:
    """One block, in a process whose ``sparklock`` is the tree first on ``sys.path``."""
    import logging

    import sparklock

    from . import bench_spark

    logging.getLogger("py4j").setLevel(logging.WARNING)
    warehouse = tempfile.mkdtemp(prefix="sparklock-bench-lease-")
    try:
        spark = bench_spark.build_session(
            "bench-lease",
            warehouse,
            conf={
                "spark.sparklock.zookeeper.quorum": zk_address,
                "spark.sparklock.zookeeper.namespace": namespace,
            },
        )
        try:
            bench_spark.make_tables(spark)
            times: dict = {}
            bench_spark.measure(spark, STATEMENTS, MODES, dict.fromkeys(STATEMENTS, rounds), times)
        finally:
            spark.stop()
            from sparklock.managers import close_all

            close_all()
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    origin = str(Path(sparklock.__file__).resolve().parent.parent)
    pairs = {label: times[label, "zookeeper"] for label in STATEMENTS}
    print("RESULT " + json.dumps({"origin": origin, "pairs": pairs}))


def run_block(tree: Path, zk_address: str, namespace: str, rounds: int) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(REPO)]))
    code = (
        "import sys; from tests.benchmarks.bench_lease_cost import child; "
        "child(sys.argv[1], sys.argv[2], int(sys.argv[3]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, zk_address, namespace, str(rounds)],
        env=env,
        cwd=tempfile.gettempdir(),  # not the checkout: its sparklock must not shadow the tree's
        capture_output=True,
        text=True,
        timeout=3600,
    )
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if out.returncode or not lines:
        raise RuntimeError(f"benchmark block in {tree} failed:\n{out.stderr[-3000:]}")
    result = json.loads(lines[-1].removeprefix("RESULT "))
    if Path(result["origin"]) != tree.resolve():
        raise RuntimeError(f"the block imported sparklock from {result['origin']}, not {tree}")
    return result["pairs"]


def run(quick: bool = False, before: str | None = None, rounds: int | None = None) -> dict:
    rounds = rounds or (QUICK_ROUNDS if quick else ROUNDS)
    rev = before or f"{LEASE_MERGE}^1"
    work = Path(tempfile.mkdtemp(prefix="sparklock-bench-lease-trees-"))
    trees = {"before": export_tree(rev, work / "before"), "after": REPO}
    pairs: dict[tuple[str, str], list] = {}
    try:
        with common.zookeeper() as zk:
            common.warm_server(zk)
            for k, name in enumerate(("before", "after", "after", "before")):
                got = run_block(trees[name], zk.address, f"bench_lease_{k}", rounds)
                for label, ps in got.items():
                    pairs.setdefault((label, name), []).extend(ps)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows, result = [], {}
    for label in STATEMENTS:
        row = [label]
        for name in ("before", "after"):
            ps = pairs[label, name]
            locked = common.median([t for t, _ in ps])
            unlocked = common.median([u for _, u in ps])
            ratio = common.median_ci([t / u for t, u in ps])
            result[label, name] = (unlocked, locked, *ratio)
            row += [
                f"{common.fmt_ms(locked)} / {common.fmt_ms(unlocked)}",
                common.fmt_ratio_ci(*ratio),
            ]
        after_over_before = result[label, "after"][1] / result[label, "before"][1]
        row.append(f"{after_over_before:.2f}")
        rows.append(row)
    common.print_table(
        f"4c. The lease's cost on ZooKeeper: locked / unlocked ms (median) and ratio "
        f"(~95 % interval), sparklock before the lease ({rev}) and after, "
        f"{2 * rounds} pairs each, mirrored blocks in separate drivers",
        ["statement", "before", "ratio", "after", "ratio", "locked after / before"],
        rows,
    )
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--before", help="git revision of sparklock before the lease")
    parser.add_argument("--rounds", type=int, help=f"pairs per block (default {ROUNDS})")
    args = parser.parse_args(argv)
    run(args.quick, args.before, args.rounds)


if __name__ == "__main__":
    main()
