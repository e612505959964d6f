"""Delta Lake pipelines in separate Spark drivers on one Delta table: without locks, then with.

What Delta users fight every day, shrunk to minutes on a laptop. Several driver processes
(separate Spark applications, as separate jobs are) share one partitioned Delta table ``accounts``
(its directory, registered in each driver's catalog, as drivers sharing a metastore see it):

* **writer** -- ``MERGE`` (a transfer between two accounts, plus a log row inserted), ``UPDATE``
  (a transfer), ``DELETE`` (a partition's log rows), in turn;
* **maintainer** -- ``OPTIMIZE`` of one partition and ``VACUUM accounts RETAIN 0 HOURS``
  (retention check disabled), in turn; with no reader (two drivers), a report (as the reader's)
  before each pair;
* **reader** -- a report pinned to a version: the newest version from ``DESCRIBE HISTORY``, then
  ``SELECT ... VERSION AS OF`` it, twice (totals, then per partition). With sparklock the report
  holds ``LOCK TABLE accounts SHARED`` around its statements, so that version stays readable.

Reports run in one driver only. ``UNLOCK TABLE`` removes every granted lock on the table,
whoever holds it (Hive's rule; requests queued for the table keep their place): a second
driver's report would remove the first one's ``LOCK TABLE`` at its end, and a ``VACUUM`` could
then delete the files the first report is about to read.

Invariant kept by every writer: ``--accounts`` accounts whose balances sum to 100 each (transfers
move money, log rows hold none). A report that sees anything else is a bad read. Roles go
writer, maintainer, reader, then writer, maintainer, ... in turn over ``--drivers`` drivers (4).
Both runs do the same for
``--seconds`` (60); the first with ``spark.sparklock.enabled=false`` (Delta's own optimistic
concurrency: conflicting commits fail), the second with sparklock on its ZooKeeper manager. Each
prints one table: statements done, Delta conflict exceptions by class, work thrown away (execution
seconds of statements whose commit failed), read failures (files gone), bad reads, the final
invariant, lock wait.

    python3 examples/delta_pipelines.py                  # starts its own local ZooKeeper
    python3 examples/delta_pipelines.py --quorum 127.0.0.1:2181 --drivers 4 --seconds 60

Needs delta-spark (``pip install 'sparklock[delta]'``); its helper resolves Delta's jars from
Maven Central into ``--ivy`` (Spark's default Ivy cache if not given) once.
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
from pipelines import RUNS, Driver, error_class  # noqa: E402 - the sibling example

ROLES = ("writer", "maintainer", "reader")
BALANCE = 100  # each account's opening balance
#: Delta's commit conflicts (io.delta.exceptions / org.apache.spark.sql.delta): the commit of a
#: statement that did all its work fails; Delta's documented remedy is to run it again
CONFLICT = re.compile(
    r"\b(?:io\.delta\.exceptions|org\.apache\.spark\.sql\.delta)\."
    r"(Concurrent\w*Exception|MetadataChangedException|ProtocolChangedException)\b"
)
#: a read that found a data file gone (deleted by VACUUM, OPTIMIZE's rewrite already vacuumed)
FILE_GONE = re.compile(r"FILE_NOT_EXIST|FileNotFound|FILE_NOT_FOUND")


def java_class(e: BaseException) -> str:
    """The Java exception's class name behind a pyspark error ('' if none): pyspark converts
    Delta's exceptions into its own, whose text names only the error condition."""
    origin = getattr(e, "_origin", None) or getattr(e, "java_exception", None)
    try:
        return str(origin.getClass().getName()) if origin is not None else ""
    except Exception:  # noqa: BLE001 - the JVM is gone: fall back to the text
        return ""


def failure_class(e: BaseException) -> str:
    """The Delta conflict's Java class name (``ConcurrentAppendException``) if it is one, else
    Spark's error class or sparklock's code (``pipelines.error_class``)."""
    trace = getattr(e, "_stackTrace", None) or getattr(e, "stackTrace", None) or ""
    m = CONFLICT.search(f"{java_class(e)} {e} {trace}")
    return m.group(1) if m else error_class(e)


def is_conflict(cls: str) -> bool:
    return cls.startswith("Concurrent") or cls in (
        "MetadataChangedException",
        "ProtocolChangedException",
    )


def role_of(index: int) -> str:
    """Driver ``index``'s role: one reader at most (see the module's doc on UNLOCK)."""
    return ROLES[index] if index < len(ROLES) else ROLES[(index - len(ROLES)) % 2]


def runs_reports(index: int, drivers: int) -> bool:
    """Whether driver ``index`` runs the pinned reports: the reader, else the first maintainer."""
    return index == min(2, drivers - 1) and role_of(index) != "writer"


# -- inside a driver process ------------------------------------------------------------------
class Tally:
    """What one driver did during one run."""

    def __init__(self) -> None:
        self.done = 0
        self.failed: Counter[str] = Counter()
        self.first_error: dict[str, str] = {}
        self.wasted_s = 0.0  # execution seconds of statements whose commit conflicted
        self.read_failures = 0  # reads that found a data file gone
        self.reads_checked = 0
        self.bad_reads = 0
        self.lock_wait_ns = 0
        self.lock_waits = 0

    def as_dict(self) -> dict:
        return {
            "done": self.done,
            "failed": dict(self.failed),
            "first_error": self.first_error,
            "wasted_s": self.wasted_s,
            "read_failures": self.read_failures,
            "reads_checked": self.reads_checked,
            "bad_reads": self.bad_reads,
            "lock_wait_s": self.lock_wait_ns / 1e9,
            "lock_waits": self.lock_waits,
        }


class DeltaPipeline:
    """One driver: a local Spark session with Delta and sparklock on the ZooKeeper manager."""

    def __init__(self, quorum: str, namespace: str, warehouse: str, ivy: str | None) -> None:
        from delta import configure_spark_with_delta_pip
        from pyspark.sql import SparkSession

        import sparklock
        from sparklock.service import get_service

        builder = (
            SparkSession.builder.master("local[2]")
            .appName(f"sparklock-delta-pipelines-{os.getpid()}")
            .config("spark.driver.memory", "512m")
            .config("spark.sql.warehouse.dir", warehouse)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config(
                "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
            )
            # a small table: Delta's defaults (50 tasks per state rebuild) would dominate
            .config("spark.databricks.delta.snapshotPartitions", "2")
            .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "2")
            .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
            .config("spark.sparklock.manager", "zookeeper")
            .config("spark.sparklock.zookeeper.quorum", quorum)
            .config("spark.sparklock.zookeeper.namespace", namespace)
        )
        if ivy:
            builder.config("spark.jars.ivy", ivy)
        self.spark = sparklock.configure(configure_spark_with_delta_pip(builder)).getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        self.tally = Tally()
        self.locked = False
        get_service().set_journal(self._journal)  # every grant says how long it waited

    def _journal(self, record: dict) -> None:
        if record.get("ev") == "held":
            self.tally.lock_wait_ns += int(record.get("waited_ns", 0))
            self.tally.lock_waits += 1

    def sql(self, text: str, read: bool = False) -> list | None:
        """Run one statement; None if it failed (counted by class, its seconds wasted if its
        commit conflicted, a read failure if it found a file gone)."""
        started = time.monotonic()
        try:
            rows = self.spark.sql(text).collect()
        except Exception as e:  # noqa: BLE001 - counting failures is the point
            cls = failure_class(e)
            self.tally.failed[cls] += 1
            if is_conflict(cls):
                self.tally.wasted_s += time.monotonic() - started
            if read and FILE_GONE.search(cls):
                self.tally.read_failures += 1
            message = str(e)
            at = max(message.find(cls), 0)
            self.tally.first_error.setdefault(cls, message[at:].split("\n", 1)[0][:240])
            return None
        self.tally.done += 1
        return rows

    # -- the shared table -----------------------------------------------------------------------
    def setup(self, cmd: dict) -> dict:
        """Lock mode for this run; register the table (the first driver creates and fills it)."""
        spark, t = self.spark, cmd["table"]
        self.locked = cmd["enabled"] == "true"
        spark.conf.set("spark.sparklock.enabled", cmd["enabled"])
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {cmd['db']}")
        if cmd["first"]:
            spark.sql(
                f"CREATE TABLE {t} (id BIGINT, p INT, v BIGINT) USING delta PARTITIONED BY (p) "
                f"LOCATION '{cmd['location']}'"
            )
            spark.sql(
                f"INSERT INTO {t} SELECT id, CAST(id % {cmd['partitions']} AS INT), {BALANCE} "
                f"FROM range(0, {cmd['accounts']}, 1, 4)"
            )
        else:
            spark.sql(f"CREATE TABLE {t} USING delta LOCATION '{cmd['location']}'")
        spark.sql(self.totals_sql(t, cmd["accounts"], "")).collect()  # warm up
        return {"ok": True}

    @staticmethod
    def totals_sql(table: str, accounts: int, version: str) -> str:
        return f"SELECT count_if(id < {accounts}), sum(v) FROM {table} {version}"

    # -- the roles ------------------------------------------------------------------------------
    def run(self, cmd: dict) -> dict:
        self.tally = Tally()
        rng = random.Random(cmd["seed"])
        step = 0
        while time.time() < cmd["deadline"]:
            getattr(self, cmd["role"])(cmd, rng, step)
            step += 1
        return self.tally.as_dict()

    def writer(self, cmd: dict, rng: random.Random, step: int) -> None:
        t, n = cmd["table"], cmd["accounts"]
        a, b = rng.sample(range(n), 2)
        amount = rng.randint(1, 10)
        if step % 4 in (0, 1):  # a transfer and its log row, in one commit
            log_id = n + cmd["seed"] * 10**9 + step
            self.sql(
                f"MERGE INTO {t} AS a USING (SELECT * FROM VALUES ({a}, {-amount}), "
                f"({b}, {amount}), ({log_id}, 0) AS s(id, dv)) s ON a.id = s.id "
                "WHEN MATCHED THEN UPDATE SET v = a.v + s.dv "
                "WHEN NOT MATCHED THEN INSERT (id, p, v) "
                f"VALUES (s.id, CAST(s.id % {cmd['partitions']} AS INT), 0)"
            )
        elif step % 4 == 2:
            self.sql(
                f"UPDATE {t} SET v = v + CASE WHEN id = {a} THEN {-amount} ELSE {amount} END "
                f"WHERE id IN ({a}, {b})"
            )
        else:  # one partition's log rows
            self.sql(f"DELETE FROM {t} WHERE id >= {n} AND p = {rng.randrange(cmd['partitions'])}")

    def maintainer(self, cmd: dict, rng: random.Random, step: int) -> None:
        t = cmd["table"]
        turn = step % 3 if cmd["reports"] else 1 + step % 2
        if turn == 0:
            self.reader(cmd, rng, step)
        elif turn == 1:
            self.sql(f"OPTIMIZE {t} WHERE p = {rng.randrange(cmd['partitions'])}")
        else:
            self.sql(f"VACUUM {t} RETAIN 0 HOURS")

    def reader(self, cmd: dict, rng: random.Random, step: int) -> None:
        """A report pinned to one version (time travel), held by LOCK TABLE when locked."""
        t = cmd["table"]
        if self.locked and self.sql(f"LOCK TABLE {t} SHARED") is None:
            return
        try:
            newest = self.sql(f"DESCRIBE HISTORY {t} LIMIT 1", read=True)
            if newest is None:
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

    def check(self, totals, parts: list, accounts: int) -> bool:
        """The invariant at one version: every account there, the money whole, the partitions
        adding up to the totals."""
        self.tally.reads_checked += 1
        good = tuple(totals) == (accounts, accounts * BALANCE) and (
            sum(r[1] for r in parts),
            sum(r[2] or 0 for r in parts),
        ) == (accounts, accounts * BALANCE)
        self.tally.bad_reads += not good
        return good

    def final(self, cmd: dict) -> dict:
        """The table once every driver stopped: the invariant and the versions committed."""
        t = cmd["table"]
        [(count, total)] = self.spark.sql(self.totals_sql(t, cmd["accounts"], "")).collect()
        version = self.spark.sql(f"DESCRIBE HISTORY {t} LIMIT 1").collect()[0][0]
        good = (count, total) == (cmd["accounts"], cmd["accounts"] * BALANCE)
        return {"accounts": count, "sum": total, "good": good, "version": version}


def driver_main(args: argparse.Namespace) -> int:
    """A driver process: one JSON command per stdin line, one ``@@<json>`` answer each."""

    def reply(obj: dict) -> None:
        sys.stdout.write("@@" + json.dumps(obj) + "\n")
        sys.stdout.flush()

    pipeline = DeltaPipeline(args.quorum, args.namespace, args.warehouse, args.ivy)
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
def run_once(drivers: list[Driver], label: str, enabled: str, opts, work: Path) -> dict:
    """One run: a fresh table, every driver for ``--seconds`` at once, then the final check."""
    db = f"delta_pipelines_{label}"
    common = {
        "db": db,
        "table": f"{db}.accounts",
        "accounts": opts.accounts,
        "partitions": opts.partitions,
    }
    location = str(work / "shared" / db / "accounts")
    setup = {"enabled": enabled, "location": location, **common}
    drivers[0].call("setup", first=True, **setup)
    for d in drivers[1:]:
        d.send("setup", first=False, **setup)
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
conflicts: statements whose Delta commit failed (ConcurrentAppendException and kin) after their work
wasted: execution seconds of those statements, thrown away
read failures: reads that found a data file gone (deleted by VACUUM under a running read)
bad reads: reports whose version broke the invariant (accounts missing, money not whole)
lock wait: time the statements spent waiting for their locks, summed"""

COLUMNS = ("done", "failed", "conflicts", "wasted", "read failures", "reads", "bad reads")


def print_table(result: dict, opts, work: Path, out=sys.stdout) -> None:
    roles = result["roles"]
    title = "locks OFF" if result["enabled"] == "false" else "locks ON (ZooKeeper manager)"
    print(
        f"\n{title}: spark.sparklock.enabled={result['enabled']}, {len(roles)} drivers, "
        f"{opts.seconds:g} s, {opts.accounts} accounts in {opts.partitions} partitions",
        file=out,
    )
    header = ["driver", *COLUMNS, "lock wait"]
    lines, total = [], Counter()
    for role, r in roles.items():
        conflicts = sum(n for c, n in r["failed"].items() if is_conflict(c))
        row = {
            "done": r["done"],
            "failed": sum(r["failed"].values()),
            "conflicts": conflicts,
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
        kind = "Delta conflict" if is_conflict(cls) else "failure"
        who = ", ".join(
            f"{role} {r['failed'][cls]}" for role, r in roles.items() if cls in r["failed"]
        )
        print(f"  {n:5d}  {cls} ({kind}; {who})", file=out)
        example = next(r["first_error"][cls] for r in roles.values() if cls in r["failed"])
        example = example.replace(str(work), "<tmp>")
        print(f"         e.g. {example[:107] + '...' if len(example) > 110 else example}", file=out)
    f = result["final"]
    verdict = "holds" if f["good"] else "BROKEN"
    print(
        f"final table (version {f['version']}): {f['accounts']} accounts, sum {f['sum']}: "
        f"invariant {verdict}",
        file=out,
        flush=True,
    )


def _cells(row) -> list[str]:
    cells = [str(int(row[c])) for c in COLUMNS]
    cells[COLUMNS.index("wasted")] = f"{row['wasted']:.1f} s"
    return [*cells, f"{row['lock wait']:.1f} s"]


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--drivers", type=int, default=4, help="driver processes (4)")
    ap.add_argument("--seconds", type=float, default=60, help="length of each run (60)")
    ap.add_argument("--warmup", type=float, default=15, help="uncounted locked run first (15)")
    ap.add_argument("--accounts", type=int, default=1000, help="accounts (1000)")
    ap.add_argument("--partitions", type=int, default=4, help="partitions (4)")
    ap.add_argument("--only", choices=sorted(RUNS), help="one run only")
    ap.add_argument("--quorum", help="use this ZooKeeper instead of starting a local one")
    ap.add_argument("--ivy", help="Spark's Ivy cache for Delta's jars (spark.jars.ivy)")
    ap.add_argument("--json", type=Path, help="also write the summaries here")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--namespace", default="hive_zookeeper_namespace", help="root znode")
    ap.add_argument("--warehouse", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    opts = parse_args(argv)
    if opts.driver:
        return driver_main(opts)
    from sparklock.managers.zookeeper.local_server import ZooKeeperServer

    work = Path(tempfile.mkdtemp(prefix="sparklock-delta-pipelines-"))
    server, drivers = None, []
    try:
        quorum = opts.quorum
        if not quorum:
            server = ZooKeeperServer(work / "zookeeper").start()
            quorum = server.address
        print(f"ZooKeeper {quorum}; starting {opts.drivers} Spark drivers ({work})", flush=True)
        extra = ("--ivy", opts.ivy) if opts.ivy else ()
        names = [f"{role_of(i)}-{i + 1}" for i in range(opts.drivers)]
        drivers = [Driver(n, quorum, opts.namespace, work, __file__, extra) for n in names]
        started = time.monotonic()
        for d in drivers:
            d.answer(600)
        print(f"drivers ready after {time.monotonic() - started:.0f} s", flush=True)
        if opts.warmup > 0:
            print(f"warm-up: {opts.warmup:g} s with locks on, not counted", flush=True)
            run_once(drivers, "warmup", "true", opts, work)
        results = []
        for label, enabled in RUNS.items():
            if opts.only in (None, label):
                results.append(run_once(drivers, label, enabled, opts, work))
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
