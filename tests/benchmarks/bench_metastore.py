"""Benchmark 8: lock + unlock of a write set in the Hive metastore — Hive's own client, sparklock's
metastore manager, and sparklock's ZooKeeper manager in the same run.

The set is what a statement writing N partitions of one table takes: SHARED on the database and
EXCLUSIVE on each partition (sparklock's implicit set; the metastore manager leaves the table's
SHARED to the metastore's own hierarchy). Hive's side is ``HiveMetaStoreClient`` with the request
builders ``DbTxnManager`` uses, one request without a transaction, timed inside its JVM
(``MetastoreLockHarness BENCH``); sparklock's sides are timed around ``acquire`` / ``release``.
Both talk to one standalone Hive 4.0.1 metastore on PostgreSQL (``tests.support.metastore``),
the ZooKeeper manager to a local ZooKeeper. Medians of the rounds; the ratio is Hive's time over
the metastore manager's (above 1: sparklock faster).

    python3 -m tests.benchmarks.bench_metastore [--quick]
"""

from __future__ import annotations

from sparklock.config import LockSettings
from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings
from sparklock.managers.zookeeper import ZooKeeperLockManager
from tests.support.metastore import MetastoreServer
from tests.support.metastore_harness import MetastoreLockHarness

from . import common

WIDTHS = (1, 100, 1000)
ROUNDS = {1: 41, 100: 21, 1000: 7}
QUICK_ROUNDS = {1: 11, 100: 5, 1000: 3}


def write_set(table: str, width: int) -> list[LockRequest]:
    return [
        LockRequest(LockObject.of_partition("bench", table, {"p": str(i)}), LockMode.EXCLUSIVE)
        for i in range(width)
    ]


def lock_unlock(manager, requests: list[LockRequest], rounds: int) -> tuple[float, float]:
    """Median ms of acquire and of release (two untimed rounds first)."""
    locks, unlocks = [], []
    for r in range(rounds + 2):
        held, lock_ms = common.timed(
            lambda r=r: manager.acquire(requests, owner="bench", query_id=f"bench-{r}")
        )
        _, unlock_ms = common.timed(held.release)  # type: ignore[attr-defined]
        if r >= 2:
            locks.append(lock_ms)
            unlocks.append(unlock_ms)
    return common.median(locks), common.median(unlocks)


def run(quick: bool) -> None:
    rounds = QUICK_ROUNDS if quick else ROUNDS
    rows = []
    settings = LockSettings(num_retries=1)
    with MetastoreServer(txn_timeout="300s") as hms, common.zookeeper() as zk:
        metastore = MetastoreLockManager(MetastoreSettings(uris=hms.uri), settings)
        try:
            with MetastoreLockHarness(hms.uri) as hive, common.sparklock_on(zk) as zookeeper:
                assert isinstance(zookeeper, ZooKeeperLockManager)
                for width in WIDTHS:
                    n = rounds[width]
                    hive_lock, hive_unlock = hive.bench(f"bench@h{width}", width, n)
                    ms_lock, ms_unlock = lock_unlock(metastore, write_set(f"m{width}", width), n)
                    zk_lock, zk_unlock = lock_unlock(zookeeper, write_set(f"z{width}", width), n)
                    rows.append(
                        [
                            f"{width:,}",
                            n,
                            f"{common.fmt_ms(hive_lock)} / {common.fmt_ms(hive_unlock)}",
                            f"{common.fmt_ms(ms_lock)} / {common.fmt_ms(ms_unlock)}",
                            common.ratio(hive_lock + hive_unlock, ms_lock + ms_unlock),
                            f"{common.fmt_ms(zk_lock)} / {common.fmt_ms(zk_unlock)}",
                        ]
                    )
        finally:
            metastore.close()
    common.print_table(
        "Metastore: lock / unlock of a write set of N partitions (ms, median)",
        [
            "N",
            "rounds",
            "Hive client",
            "sparklock metastore",
            "Hive / sparklock",
            "sparklock ZooKeeper",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> None:
    common.bench_main(run, __doc__, argv)


if __name__ == "__main__":
    main()
