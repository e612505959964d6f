"""Iceberg pipelines in separate Spark drivers on one Iceberg table: without locks, then with.

The sibling of ``delta_pipelines.py`` for Iceberg users. Several driver processes (separate Spark
applications, as separate jobs are) share one partitioned Iceberg table ``ice.<db>.accounts`` of a
hadoop catalog ``ice`` on one warehouse directory (each driver's catalog reads it from there):

* **writer** -- ``MERGE`` (a transfer between two accounts, plus a log row inserted), ``UPDATE``
  (a transfer), ``DELETE`` (one partition's log rows: pinned to that identity partition), in turn;
* **maintainer** -- ``CALL ice.system.rewrite_data_files`` and ``CALL ice.system.expire_snapshots``
  (keeping only the newest snapshot), in turn; with no reader (two drivers), a report before each;
* **reader** -- a report pinned to one snapshot: the newest from ``t.snapshots``, then ``SELECT
  ... VERSION AS OF`` it, twice (totals, then per partition). With sparklock the report holds
  ``LOCK TABLE ice.<db>.accounts SHARED`` around its statements, so that snapshot stays readable.

Invariant kept by every writer: ``--accounts`` accounts whose balances sum to 100 each. Both runs
do the same for ``--seconds`` (60); the first with ``spark.sparklock.enabled=false`` (Iceberg's own
optimistic concurrency: a commit that conflicts fails with ``ValidationException`` or
``CommitFailedException`` after all its work), the second with sparklock on its ZooKeeper manager.
Each prints one table: statements done, Iceberg's commit failures by class, work thrown away,
read failures (files gone), bad reads, the final invariant, lock waits.

    python3 examples/iceberg_pipelines.py                  # starts its own local ZooKeeper
    python3 examples/iceberg_pipelines.py --drivers 2 --seconds 10 --warmup 0   # a smoke run

Needs a pyspark line Iceberg builds a runtime for (3.5, 4.0, 4.1); ``configure_iceberg`` has
Spark's resolver fetch the runtime jar from Maven Central once. A hadoop catalog on a local disk
is for trying things on one machine: its commits rely on an atomic rename the local file system
does not promise across processes; use a Hive, REST or JDBC catalog for real pipelines.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from delta_pipelines import (  # noqa: E402 - the sibling examples
    BALANCE,
    COLUMNS,
    DeltaPipeline,
    Tally,
    _cells,
    java_class,
    role_of,
    runs_reports,
)
from pipelines import RUNS, Driver, error_class  # noqa: E402

#: Iceberg's commit failures: the statement did all its work, then its commit was refused
CONFLICT = re.compile(r"\borg\.apache\.iceberg\.exceptions\.(\w+Exception)\b")
COMMIT_FAILURES = ("ValidationException", "CommitFailedException", "CommitStateUnknownException")
#: a read that found a data or metadata file gone (deleted by expire_snapshots)
FILE_GONE = re.compile(r"FILE_NOT_EXIST|FileNotFound|FILE_NOT_FOUND|NotFoundException")


def failure_class(e: BaseException) -> str:
    """Iceberg's exception class (``ValidationException``) if it is one, else Spark's error
    class or sparklock's code (``pipelines.error_class``)."""
    trace = getattr(e, "_stackTrace", None) or getattr(e, "stackTrace", None) or ""
    m = CONFLICT.search(f"{java_class(e)} {e} {trace}")
    return m.group(1) if m else error_class(e)


def is_conflict(cls: str) -> bool:
    return cls in COMMIT_FAILURES


# -- inside a driver process ------------------------------------------------------------------
class IcebergPipeline(DeltaPipeline):
    """One driver: a local Spark session with Iceberg's catalog ``ice`` and sparklock on the
    ZooKeeper manager (the run loop, the lock-wait journal and the invariant: Delta's sibling)."""

    def __init__(self, quorum: str, namespace: str, warehouse: str, shared: str) -> None:
        from pyspark.sql import SparkSession

        import sparklock
        from sparklock.service import get_service
        from sparklock.spark.iceberg import configure_iceberg

        builder = (
            SparkSession.builder.master("local[2]")
            .appName(f"sparklock-iceberg-pipelines-{os.getpid()}")
            .config("spark.driver.memory", "512m")
            .config("spark.sql.warehouse.dir", warehouse)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            # every statement loads the table's newest metadata (other drivers commit to it)
            .config("spark.sql.catalog.ice.cache-enabled", "false")
            .config("spark.sparklock.manager", "zookeeper")
            .config("spark.sparklock.zookeeper.quorum", quorum)
            .config("spark.sparklock.zookeeper.namespace", namespace)
        )
        configure_iceberg(builder, "ice", catalog_type="hadoop", warehouse=shared)
        self.spark = sparklock.configure(builder).getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        self.tally = Tally()
        self.locked = False
        get_service().set_journal(self._journal)  # every grant says how long it waited

    def sql(self, text: str, read: bool = False) -> list | None:
        """Run one statement; None if it failed (counted by class, its seconds wasted if its
        commit was refused, a read failure if it found a file gone)."""
        started = time.monotonic()
        try:
            rows = self.spark.sql(text).collect()
        except Exception as e:  # noqa: BLE001 - counting failures is the point
            cls = failure_class(e)
            self.tally.failed[cls] += 1
            if is_conflict(cls):
                self.tally.wasted_s += time.monotonic() - started
            if read and FILE_GONE.search(f"{cls} {e}"):
                self.tally.read_failures += 1
            message = str(e)
            at = max(message.find(cls), 0)
            self.tally.first_error.setdefault(cls, message[at:].split("\n", 1)[0][:240])
            return None
        self.tally.done += 1
        return rows

    def setup(self, cmd: dict) -> dict:
        """Lock mode for this run; the first driver creates and fills the table."""
        spark, t = self.spark, cmd["table"]
        self.locked = cmd["enabled"] == "true"
        spark.conf.set("spark.sparklock.enabled", cmd["enabled"])
        if cmd["first"]:
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS ice.{cmd['db']}")
            spark.sql(
                f"CREATE TABLE {t} (id BIGINT, p INT, v BIGINT) USING iceberg PARTITIONED BY (p)"
            )
            spark.sql(
                f"INSERT INTO {t} SELECT id, CAST(id % {cmd['partitions']} AS INT), {BALANCE} "
                f"FROM range(0, {cmd['accounts']}, 1, 4)"
            )
        spark.sql(self.totals_sql(t, cmd["accounts"], "")).collect()  # warm up
        return {"ok": True}

    def writer(self, cmd: dict, rng: random.Random, step: int) -> None:
        t, n, parts = cmd["table"], cmd["accounts"], cmd["partitions"]
        a, b = rng.sample(range(n), 2)
        amount = rng.randint(1, 10)
        if step % 4 in (0, 1):  # a transfer and its log row, in one commit
            log_id = n + cmd["seed"] * 10**9 + step
            self.sql(
                f"MERGE INTO {t} AS a USING (SELECT * FROM VALUES ({a}, {-amount}), "
                f"({b}, {amount}), ({log_id}, 0) AS s(id, dv)) s ON a.id = s.id "
                "WHEN MATCHED THEN UPDATE SET v = a.v + s.dv "
                "WHEN NOT MATCHED THEN INSERT (id, p, v) "
                f"VALUES (s.id, CAST(s.id % {parts} AS INT), 0)"
            )
        elif step % 4 == 2:
            self.sql(
                f"UPDATE {t} SET v = v + CASE WHEN id = {a} THEN {-amount} ELSE {amount} END "
                f"WHERE id IN ({a}, {b})"
            )
        else:  # one partition's log rows: EXCLUSIVE on that partition only
            self.sql(f"DELETE FROM {t} WHERE p = {rng.randrange(parts)} AND id >= {n}")

    def maintainer(self, cmd: dict, rng: random.Random, step: int) -> None:
        name = cmd["table"].split(".", 1)[1]  # db.accounts, as the procedures take it
        turn = step % 3 if cmd["reports"] else 1 + step % 2
        if turn == 0:
            self.reader(cmd, rng, step)
        elif turn == 1:
            self.sql(
                f"CALL ice.system.rewrite_data_files(table => '{name}', "
                "options => map('min-input-files', '2'))"
            )
        else:
            self.sql(
                f"CALL ice.system.expire_snapshots(table => '{name}', "
                "older_than => current_timestamp(), retain_last => 1)"
            )

    def reader(self, cmd: dict, rng: random.Random, step: int) -> None:
        """A report pinned to one snapshot (time travel), held by LOCK TABLE when locked."""
        t = cmd["table"]
        if self.locked and self.sql(f"LOCK TABLE {t} SHARED") is None:
            return
        try:
            newest = self.sql(
                f"SELECT snapshot_id FROM {t}.snapshots ORDER BY committed_at DESC LIMIT 1",
                read=True,
            )
            if not newest:
                return
            version = f"VERSION AS OF {newest[0][0]}"
            totals = self.sql(self.totals_sql(t, cmd["accounts"], version), read=True)
            parts = self.sql(
                f"SELECT p, count_if(id < {cmd['accounts']}), sum(v) FROM {t} {version} GROUP BY p",
                read=True,
            )
            if totals is not None and parts is not None:
                self.check(totals[0], parts, cmd["accounts"])
        finally:
            if self.locked:
                self.sql(f"UNLOCK TABLE {t}")

    def final(self, cmd: dict) -> dict:
        """The table once every driver stopped: the invariant and the snapshots committed."""
        t = cmd["table"]
        [(count, total)] = self.spark.sql(self.totals_sql(t, cmd["accounts"], "")).collect()
        [(commits,)] = self.spark.sql(f"SELECT count(*) FROM {t}.history").collect()
        good = (count, total) == (cmd["accounts"], cmd["accounts"] * BALANCE)
        return {"accounts": count, "sum": total, "good": good, "version": commits}


def driver_main(args: argparse.Namespace) -> int:
    """A driver process: one JSON command per stdin line, one ``@@<json>`` answer each."""

    def reply(obj: dict) -> None:
        sys.stdout.write("@@" + json.dumps(obj) + "\n")
        sys.stdout.flush()

    pipeline = IcebergPipeline(args.quorum, args.namespace, args.warehouse, args.shared)
    reply({"ready": True})
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["op"] == "exit":
                break
            reply(getattr(pipeline, cmd["op"])(cmd))
        except Exception as e:  # noqa: BLE001 - the coordinator shows it
            reply({"error": f"{type(e).__name__}: {e}"})
    pipeline.spark.stop()
    return 0


# -- the coordinator --------------------------------------------------------------------------
def run_once(drivers: list[Driver], label: str, enabled: str, opts) -> dict:
    """One run: a fresh table, every driver for ``--seconds`` at once, then the final check."""
    db = f"pipelines_{label}"
    common = {
        "db": db,
        "table": f"ice.{db}.accounts",
        "accounts": opts.accounts,
        "partitions": opts.partitions,
    }
    drivers[0].call("setup", first=True, enabled=enabled, **common)
    for d in drivers[1:]:
        d.send("setup", first=False, enabled=enabled, **common)
    for d in drivers[1:]:
        d.answer(600)
    deadline = time.time() + (opts.warmup if label == "warmup" else opts.seconds)
    for i, d in enumerate(drivers):
        reports = runs_reports(i, len(drivers))
        d.send("run", role=role_of(i), reports=reports, deadline=deadline, seed=i + 1, **common)
    roles = {d.role: d.answer(opts.seconds + 900) for d in drivers}
    final = drivers[0].call("final", **common)
    return {"label": label, "enabled": enabled, "roles": roles, "final": final}


LEGEND = """\
conflicts: statements whose Iceberg commit was refused (ValidationException,
  CommitFailedException) after their work
wasted: execution seconds of those statements, thrown away
read failures: reads that found a file gone (deleted by expire_snapshots under a running read)
bad reads: reports whose snapshot broke the invariant (accounts missing, money not whole)
lock wait: time the statements spent waiting for their locks, summed"""


def print_table(result: dict, opts, work: Path, out=sys.stdout) -> None:
    roles = result["roles"]
    title = "locks OFF" if result["enabled"] == "false" else "locks ON (ZooKeeper manager)"
    print(
        f"\n{title}: {len(roles)} drivers, {opts.seconds:g} s, {opts.accounts} accounts in "
        f"{opts.partitions} identity partitions",
        file=out,
    )
    header = ["driver", *COLUMNS, "lock wait"]
    lines, total = [], Counter()
    for role, r in roles.items():
        row = {
            "done": r["done"],
            "failed": sum(r["failed"].values()),
            "conflicts": sum(n for c, n in r["failed"].items() if is_conflict(c)),
            "wasted": r["wasted_s"],
            "read failures": r["read_failures"],
            "reads": r["reads_checked"],
            "bad reads": r["bad_reads"],
            "lock wait": r["lock_wait_s"],
        }
        total.update(row)
        lines.append([role, *_cells(row)])
    lines.append(["all", *_cells(total)])
    widths = [max(len(c), *(len(ln[i]) for ln in lines)) for i, c in enumerate(header)]
    for ln in [header, *lines]:
        pairs = enumerate(zip(ln, widths, strict=True))
        print("  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in pairs), file=out)
    by_class: Counter[str] = Counter()
    for r in roles.values():
        by_class.update(r["failed"])
    print("failed by class:" + ("" if by_class else " none"), file=out)
    for cls, n in by_class.most_common():
        kind = "Iceberg commit refused" if is_conflict(cls) else "failure"
        print(f"  {n:5d}  {cls} ({kind})", file=out)
        example = next(r["first_error"][cls] for r in roles.values() if cls in r["failed"])
        print(f"         e.g. {example.replace(str(work), '<tmp>')[:110]}", file=out)
    f = result["final"]
    verdict = "holds" if f["good"] else "BROKEN"
    print(
        f"final table ({f['version']} snapshots in its history): {f['accounts']} accounts, "
        f"sum {f['sum']}: invariant {verdict}",
        file=out,
        flush=True,
    )


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--drivers", type=int, default=4, help="driver processes (4)")
    ap.add_argument("--seconds", type=float, default=60, help="length of each run (60)")
    ap.add_argument("--warmup", type=float, default=15, help="uncounted locked run first (15)")
    ap.add_argument("--accounts", type=int, default=1000, help="accounts (1000)")
    ap.add_argument("--partitions", type=int, default=4, help="identity partitions (4)")
    ap.add_argument("--only", choices=sorted(RUNS), help="one run only")
    ap.add_argument("--quorum", help="use this ZooKeeper instead of starting a local one")
    ap.add_argument("--json", type=Path, help="also write the summaries here")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--namespace", default="hive_zookeeper_namespace", help="root znode")
    ap.add_argument("--warehouse", help=argparse.SUPPRESS)
    ap.add_argument("--shared", help=argparse.SUPPRESS)  # the Iceberg warehouse of every driver
    return ap.parse_args(argv)


def main(argv=None) -> int:
    opts = parse_args(argv)
    if opts.driver:
        return driver_main(opts)
    from sparklock.managers.zookeeper.local_server import ZooKeeperServer

    work = Path(tempfile.mkdtemp(prefix="sparklock-iceberg-pipelines-"))
    server, drivers = None, []
    try:
        quorum = opts.quorum
        if not quorum:
            server = ZooKeeperServer(work / "zookeeper").start()
            quorum = server.address
        print(f"ZooKeeper {quorum}; starting {opts.drivers} Spark drivers ({work})", flush=True)
        extra = ("--shared", str(work / "iceberg"))
        names = [f"{role_of(i)}-{i + 1}" for i in range(opts.drivers)]
        drivers = [Driver(n, quorum, opts.namespace, work, __file__, extra) for n in names]
        started = time.monotonic()
        for d in drivers:
            d.answer(600)
        print(f"drivers ready after {time.monotonic() - started:.0f} s", flush=True)
        if opts.warmup > 0:
            print(f"warm-up: {opts.warmup:g} s with locks on, not counted", flush=True)
            run_once(drivers, "warmup", "true", opts)
        results = []
        for label, enabled in RUNS.items():
            if opts.only in (None, label):
                results.append(run_once(drivers, label, enabled, opts))
                print_table(results[-1], opts, work)
        print(f"\n{LEGEND}")
        if opts.json:
            opts.json.write_text(json.dumps(results, indent=1))
        return 0
    finally:
        for d in drivers:
            d.close()
        for d in drivers:
            d.wait_closed()
        if server is not None:
            server.cleanup()
        if os.environ.get("SPARKLOCK_PIPELINES_KEEP"):  # the drivers' logs, to read afterwards
            print(f"kept {work}")
        else:
            import shutil

            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
