"""Delta Lake across driver processes on ZooKeeper: a ``MERGE`` in one Spark application waits for
an ``OPTIMIZE`` of the same table in another, then reads the table ``OPTIMIZE`` committed.

Without locks the two race: both read version n, ``OPTIMIZE`` rewrites the files the ``MERGE``
rewrites too, and the one committing second fails with ``ConcurrentDeleteReadException`` (or
kin) after doing all its work. With sparklock the ``MERGE`` waits for the lock before it reads
anything: its commit's ``readVersion`` is ``OPTIMIZE``'s version, no work is thrown away.

Two driver processes with Delta's own jars (``tests/support/driver.py --delta``) share one Delta
table (its directory, registered in each driver's catalog) and the test's ZooKeeper server.
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import pytest

from tests.support import delta
from tests.support.driver import Driver
from tests.support.locks import wait_for
from tests.support.show_locks_columns import EXTENDED

# Delta-line only (``-m delta``, Delta 4.4 on pyspark 4.2): driver processes are costly, and the
# waiting they show is the lock manager's, the same on every line.
pytestmark = [pytest.mark.delta, delta.needs_delta]

ROWS, PARTITIONS, TASKS = 4000, 4, 60  # TASKS x PARTITIONS small files for OPTIMIZE to compact
#: OPTIMIZE compacts one partition after the other: seconds to see it hold its lock
OPTIMIZE_CONF = {"spark.databricks.delta.optimize.maxThreads": "1"}
#: a budget far longer than OPTIMIZE takes (2 min), polled every 100 ms
PATIENT = {"spark.sparklock.lock.numRetries": "1200", "spark.sparklock.lock.retryInterval": "100ms"}


def start(drivers: dict[str, dict], quorum: str, namespace: str, root: Path) -> dict[str, Driver]:
    """Start the drivers at once (each JVM takes seconds to come up)."""
    started: dict[str, Driver] = {}
    errors: list[BaseException] = []

    def one(name: str, conf: dict) -> None:
        try:
            started[name] = Driver(quorum, namespace, str(root / name), conf=conf, delta=True)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=one, args=item) for item in drivers.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for d in started.values():
            d.close()
        raise errors[0]
    return started


def ok(answer: dict) -> list:
    assert answer.get("ok"), answer
    return answer["rows"]


def locks_of(driver: Driver) -> list[dict[str, str]]:
    """``SHOW LOCKS t EXTENDED`` as this driver sees the ZooKeeper tree, rows named."""
    return [dict(zip(EXTENDED, r, strict=True)) for r in ok(driver.sql("SHOW LOCKS t EXTENDED"))]


def commits(table: Path) -> dict[int, dict]:
    """Each Delta commit's ``commitInfo`` by version, read from the table's log."""
    found = {}
    for f in (table / "_delta_log").glob("*.json"):
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                found[int(f.stem)] = action["commitInfo"]
    return found


def test_merge_in_one_driver_waits_for_optimize_in_another(zk_server, tmp_path):
    namespace = f"sparklock_delta_{uuid.uuid4().hex[:8]}"
    table = tmp_path / "shared" / "t"
    drivers = start(
        {"optimizer": {**OPTIMIZE_CONF, **PATIENT}, "merger": PATIENT},
        zk_server.address,
        namespace,
        tmp_path,
    )
    a, b = drivers["optimizer"], drivers["merger"]
    try:
        create = (
            f"CREATE TABLE t (id BIGINT, p INT, v BIGINT) USING delta PARTITIONED BY (p) "
            f"LOCATION '{table}'"
        )
        ok(a.sql(create))
        fill = f"SELECT id, CAST(id % {PARTITIONS} AS INT), 0 FROM range(0, {ROWS}, 1, {TASKS})"
        ok(a.sql(f"INSERT INTO t {fill}"))
        ok(b.sql(create))  # the same files, registered in the other driver's catalog
        files = len(list(table.glob("p=*/*.parquet")))
        assert files >= TASKS * PARTITIONS // 2, files  # many small files: a slow OPTIMIZE

        optimized: dict = {}
        optimizer = threading.Thread(target=lambda: optimized.update(a.sql("OPTIMIZE t", 300)))
        optimizer.start()

        def holding() -> list[dict[str, str]]:
            return [
                r
                for r in locks_of(b)
                if r["state"] == "ACQUIRED" and "optimize" in r["query_string"].lower()
            ]

        assert wait_for(holding, 60), locks_of(b)
        [held] = [r for r in holding() if r["name"] == "default@t"]
        assert held["mode"] == "EXCLUSIVE"

        merge = (
            f"MERGE INTO t USING (SELECT id FROM range(0, {ROWS}, 3)) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = t.v + 1"
        )
        assert b.send({"op": "bg", "sql": merge, "id": "merge"})["started"]

        def waiting() -> list[dict[str, str]]:
            return [
                r
                for r in locks_of(b)
                if r["state"] == "WAITING" and "merge" in r["query_string"].lower()
            ]

        # the MERGE waits on the OPTIMIZE's lock, held by the other driver
        assert wait_for(waiting, 60), locks_of(b)
        assert optimizer.is_alive(), "OPTIMIZE ended before the MERGE was seen waiting"
        [row] = [r for r in waiting() if r["name"] == "default@t"]
        assert row["mode"] == "EXCLUSIVE"
        assert row["blocked_by"] == f"EXCLUSIVE default@t query_id={held['query_id']}"
        assert row["agent"] != held["agent"]  # two Spark applications

        optimizer.join(300)
        assert optimized.get("ok"), optimized  # no Delta conflict exception on either side
        merged = b.send({"op": "result", "id": "merge", "timeout": 300}, 330)
        assert merged.get("ok"), merged

        log = commits(table)
        [opt_version] = [v for v, c in log.items() if c["operation"] == "OPTIMIZE"]
        [merge_version] = [v for v, c in log.items() if c["operation"] == "MERGE"]
        assert merge_version == opt_version + 1
        # the MERGE read the snapshot OPTIMIZE committed: it started after the commit, not before
        assert log[merge_version]["readVersion"] == opt_version
        assert int(log[opt_version]["operationMetrics"]["numRemovedFiles"]) == files
        assert ok(b.sql("SELECT count(*), sum(v) FROM t")) == [[ROWS, len(range(0, ROWS, 3))]]
        assert locks_of(b) == []
    finally:
        for d in (a, b):
            d.close()
