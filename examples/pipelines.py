"""Two pipelines and a report on shared tables, in separate Spark drivers: without locks, then with.

What a data team runs every day, shrunk to a few minutes on a laptop. Three driver processes
(separate Spark applications, as separate jobs are) share one hourly-partitioned table ``events``
whose files live in one directory (an external parquet table each driver registers in its own
catalog, as drivers sharing a metastore would see it):

* **loader** -- the hourly load: ``INSERT OVERWRITE events PARTITION (hr=H) SELECT ...`` of a new
  batch of exactly ``--rows`` rows in ``--files`` files, hour after hour;
* **compactor** -- rewrites an hour into one file: copies the partition into its own staging
  table, then ``INSERT OVERWRITE events PARTITION (hr=H)`` from the copy;
* **reporter** -- ``REFRESH TABLE`` and a per-hour report (rows, batches) over every hour.

Invariant kept by every writer: each hour holds exactly ``--rows`` rows, all of one batch. A read
that sees fewer rows saw a partition half-written or rows lost; one that sees rows of two batches
(or too many) saw two writes mixed. The copy the compactor makes is checked the same way. Both
runs do exactly the same thing for ``--seconds``; the first with ``spark.sparklock.enabled=false``,
the second with sparklock on its ZooKeeper manager. Each prints one table: statements, failures by
error class, bad reads, partitions left wrong at the end, time spent waiting for locks.

    python3 examples/pipelines.py                        # starts its own local ZooKeeper
    python3 examples/pipelines.py --quorum 127.0.0.1:2181  # or uses `python -m sparklock zookeeper`

While it runs, ``python3 -m sparklock locks`` (plus ``--quorum`` if not the default) lists locks.
Options: ``--seconds`` per run (60), ``--warmup`` (15: an uncounted locked run first, so that
neither counted run has cold JVMs), ``--hours`` (4), ``--rows`` per hour (20000), ``--files`` per
load (4), ``--only off|on``, ``--json PATH`` (the summaries, for tests).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROLES = ("loader", "compactor", "reporter")
PYTHONPATH = os.environ.get("PYTHONPATH", "")
RUNS = {"off": "false", "on": "true"}  # run label -> spark.sparklock.enabled


# -- inside a driver process ------------------------------------------------------------------
class Tally:
    """What one role did during one run."""

    def __init__(self) -> None:
        self.statements = 0
        self.failed: Counter[str] = Counter()
        self.first_error: dict[str, str] = {}
        self.reads_checked = 0
        self.missing_rows = 0  # reads that saw an hour with fewer rows than it must have
        self.mixed_writes = 0  # reads that saw an hour with rows of two writes (or too many)
        self.lock_wait_ns = 0
        self.lock_waits = 0

    def as_dict(self) -> dict:
        return {
            "statements": self.statements,
            "failed": dict(self.failed),
            "first_error": self.first_error,
            "reads_checked": self.reads_checked,
            "missing_rows": self.missing_rows,
            "mixed_writes": self.mixed_writes,
            "lock_wait_s": self.lock_wait_ns / 1e9,
            "lock_waits": self.lock_waits,
        }


def error_class(e: BaseException) -> str:
    """Spark's error class (``FAILED_READ_FILE.FILE_NOT_EXIST``, also when it is the cause of a
    failed job), sparklock's code (``LOCK_CONFLICT``), else the exception's class name."""
    for getter in ("getCondition", "getErrorClass"):
        try:
            found = getattr(e, getter)()
        except Exception:  # noqa: BLE001 - not a Spark error, or an older pyspark
            found = None
        if found:
            return str(found)
    text = str(e)  # a Py4JJavaError's text holds the whole Java trace
    m = re.search(r"\[([A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)*)\]", text)
    m = m or re.search(r"\b([A-Z][A-Z_]{3,}[A-Z]): ", text)
    m = m or re.search(r"\b([A-Za-z0-9_]+(?:Exception|Error))\b", text)
    return m.group(1) if m else type(e).__name__


def bad_hours(rows: list, hours: list[str], per_hour: int) -> tuple[list[str], list[str]]:
    """(hours with fewer rows than ``per_hour``, hours with rows of two writes or too many) of a
    per-hour report: rows of (hr, row count, distinct batches)."""
    seen = {r[0]: (r[1], r[2]) for r in rows}
    missing = [h for h in hours if seen.get(h, (0, 0))[0] < per_hour]
    mixed = [h for h in hours if h in seen and (seen[h][0] > per_hour or seen[h][1] > 1)]
    return missing, mixed


class Pipeline:
    """One driver: a local Spark session with sparklock on the ZooKeeper manager."""

    def __init__(self, quorum: str, namespace: str, warehouse: str) -> None:
        from pyspark.sql import SparkSession

        import sparklock
        from sparklock.service import get_service

        builder = (
            SparkSession.builder.master("local[2]")
            .appName(f"sparklock-pipelines-{os.getpid()}")
            .config("spark.driver.memory", "512m")
            .config("spark.sql.warehouse.dir", warehouse)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sparklock.manager", "zookeeper")
            .config("spark.sparklock.zookeeper.quorum", quorum)
            .config("spark.sparklock.zookeeper.namespace", namespace)
        )
        self.spark = sparklock.configure(builder).getOrCreate()
        self.spark.sparkContext.setLogLevel("ERROR")
        self.tally = Tally()
        # every grant says how long it waited for its locks (nothing is granted when disabled)
        get_service().set_journal(self._journal)

    def _journal(self, record: dict) -> None:
        if record.get("ev") == "held":
            self.tally.lock_wait_ns += int(record.get("waited_ns", 0))
            self.tally.lock_waits += 1

    def sql(self, text: str) -> list | None:
        """Run one counted statement; None if it failed (counted by error class)."""
        self.tally.statements += 1
        try:
            return self.spark.sql(text).collect()
        except Exception as e:  # noqa: BLE001 - counting failures is the point
            cls = error_class(e)
            self.tally.failed[cls] += 1
            text = str(e)  # from where the class is named: past py4j's "error while calling"
            at = text.find(cls)
            if at > 0 and text[at - 1] == "[":
                at -= 1
            self.tally.first_error.setdefault(cls, text[max(at, 0) :].split("\n", 1)[0][:240])
            return None

    def check(self, rows: list, hours: list[str], per_hour: int) -> list[str]:
        """Check (hr, rows, batches) rows against the invariant; count the bad read."""
        missing, mixed = bad_hours(rows, hours, per_hour)
        self.tally.reads_checked += 1
        self.tally.missing_rows += bool(missing)
        self.tally.mixed_writes += bool(mixed)
        seen = {r[0]: r[1] for r in rows}
        return [f"hr={h}: {seen.get(h, 0)} rows" for h in sorted({*missing, *mixed})]

    # -- the shared tables ----------------------------------------------------------------------
    def setup(self, cmd: dict) -> dict:
        """Lock mode for this run; register ``events`` (the first driver also fills it)."""
        spark, db = self.spark, cmd["db"]
        spark.conf.set("spark.sparklock.enabled", cmd["enabled"])
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        spark.sql(
            f"CREATE TABLE {db}.events (id BIGINT, batch BIGINT, hr STRING) USING parquet "
            f"PARTITIONED BY (hr) LOCATION '{cmd['location']}'"
        )
        if cmd["first"]:  # every hour at once: batch 0
            hours = ", ".join(f"('{h}')" for h in cmd["hours"])
            spark.sql(
                f"INSERT INTO {db}.events SELECT id, 0 AS batch, h.hr "
                f"FROM range(0, {cmd['rows']}, 1, {cmd['files']}) "
                f"CROSS JOIN (VALUES {hours}) AS h(hr)"
            )
        else:
            spark.sql(f"MSCK REPAIR TABLE {db}.events")
        spark.sql(f"CREATE TABLE {db}.compaction_stage (id BIGINT, batch BIGINT) USING parquet")
        warm = spark.sql(self.report_sql(db)).collect()  # warm up (the first run would be slower)
        return {"hours": len(warm)}

    @staticmethod
    def load_sql(db: str, hour: str, batch: int, rows: int, files: int) -> str:
        return (
            f"INSERT OVERWRITE {db}.events PARTITION (hr='{hour}') "
            f"SELECT id, {batch} AS batch FROM range(0, {rows}, 1, {files})"
        )

    def report_sql(self, db: str) -> str:
        return f"SELECT hr, count(*), count(DISTINCT batch) FROM {db}.events GROUP BY hr"

    # -- the roles ------------------------------------------------------------------------------
    def run(self, cmd: dict) -> dict:
        self.tally = Tally()
        role, db, hours = cmd["role"], cmd["db"], cmd["hours"]
        rows, files, deadline = cmd["rows"], cmd["files"], cmd["deadline"]
        rng = random.Random(cmd.get("seed", 1))
        step = 0
        while time.time() < deadline:
            hour = hours[step % len(hours)] if role == "loader" else rng.choice(hours)
            step += 1
            if role == "loader":
                self.sql(self.load_sql(db, hour, time.time_ns() // 1000, rows, files))
            elif role == "compactor":
                self.compact(db, hour, rows)
            else:
                if self.sql(f"REFRESH TABLE {db}.events") is not None:
                    got = self.sql(self.report_sql(db))
                    if got is not None:
                        self.check(got, hours, rows)
        return self.tally.as_dict()

    def compact(self, db: str, hour: str, rows: int) -> None:
        """Copy one hour aside and write it back as one file (the copy is checked too)."""
        if self.sql(f"REFRESH TABLE {db}.events") is None:
            return
        copied = self.sql(
            f"INSERT OVERWRITE {db}.compaction_stage SELECT id, batch FROM {db}.events "
            f"WHERE hr = '{hour}'"
        )
        if copied is None:
            return
        got = self.sql(
            f"SELECT '{hour}', count(*), count(DISTINCT batch) FROM {db}.compaction_stage"
        )
        if got is not None:
            self.check(got, [hour], rows)
        # like a real compaction, it does not check: what it copied is what it writes back
        self.sql(
            f"INSERT OVERWRITE {db}.events PARTITION (hr='{hour}') "
            f"SELECT /*+ COALESCE(1) */ id, batch FROM {db}.compaction_stage"
        )

    def final(self, cmd: dict) -> dict:
        """The table once every pipeline stopped: which hours are left wrong for good."""
        db = cmd["db"]
        self.spark.sql(f"REFRESH TABLE {db}.events")
        rows = self.spark.sql(self.report_sql(db)).collect()
        return {"wrong": self.check(rows, cmd["hours"], cmd["rows"])}


def driver_main(args: argparse.Namespace) -> int:
    """A driver process: one JSON command per stdin line, one ``@@<json>`` answer each."""

    def reply(obj: dict) -> None:
        sys.stdout.write("@@" + json.dumps(obj) + "\n")
        sys.stdout.flush()

    pipeline = Pipeline(args.quorum, args.namespace, args.warehouse)
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
class Driver:
    """A driver process started by the coordinator (``pipelines.py --driver``; ``script`` and
    ``extra`` arguments: another example's drivers, which speak the same protocol)."""

    def __init__(
        self,
        role: str,
        quorum: str,
        namespace: str,
        work: Path,
        script: str = __file__,
        extra: tuple[str, ...] = (),
    ) -> None:
        repo = Path(__file__).resolve().parents[1]
        self.role = role
        self.log = work / f"driver-{role}.log"
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, script, "--driver", "--quorum", quorum]
                + ["--namespace", namespace, "--warehouse", str(work / f"warehouse-{role}")]
                + list(extra),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), PYTHONPATH])},
            )
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("@@"):
                self.replies.put(json.loads(line[2:]))
        self.replies.put(None)

    def answer(self, timeout: float) -> dict:
        try:
            got = self.replies.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(
                f"{self.role} did not answer in {timeout:.0f}s; see {self.log}"
            ) from None
        if got is None or "error" in got:
            raise RuntimeError(f"{self.role} failed ({got}); see {self.log}")
        return got

    def send(self, op: str, **fields) -> None:
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()

    def call(self, op: str, timeout: float = 300, **fields) -> dict:
        self.send(op, **fields)
        return self.answer(timeout)

    def close(self) -> None:
        """Ask the driver to stop Spark and exit (then :meth:`wait_closed`)."""
        if self.proc.poll() is None:
            try:
                self.send("exit")
            except OSError:
                pass

    def wait_closed(self) -> None:
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)


def run_once(
    drivers: list[Driver], label: str, enabled: str, seconds: float, opts, work: Path
) -> dict:
    """One run: fresh tables, every role for ``seconds`` at once, then the end-state check."""
    db = f"pipelines_{label}"
    common = {"db": db, "hours": opts.hour_names, "rows": opts.rows, "files": opts.files}
    location = str(work / "shared" / db / "events")
    setup = {"enabled": enabled, "location": location, **common}
    drivers[0].call("setup", first=True, **setup)  # the loader creates and fills the table
    for d in drivers[1:]:  # the others find its files
        d.send("setup", first=False, **setup)
    for d in drivers[1:]:
        d.answer(300)
    deadline = time.time() + seconds
    for i, d in enumerate(drivers):
        d.send("run", role=d.role, deadline=deadline, seed=i + 1, **common)
    roles = {d.role: d.answer(seconds + 600) for d in drivers}
    final = drivers[-1].call("final", **common)
    return {"label": label, "enabled": enabled, "roles": roles, "wrong": final["wrong"]}


LEGEND = """\
missing rows: reads that saw an hour with fewer rows than every writer leaves (half-written, lost)
mixed writes: reads that saw an hour with rows of two writes (or too many rows)
lock wait: time the statements spent waiting for their locks, summed"""


def print_table(result: dict, opts, work: Path, out=sys.stdout) -> None:
    roles = result["roles"]
    title = "locks OFF" if result["enabled"] == "false" else "locks ON (ZooKeeper manager)"
    print(
        f"\n{title}: spark.sparklock.enabled={result['enabled']}, {len(roles)} drivers, "
        f"{opts.seconds:g} s, {opts.hours} hours x {opts.rows} rows",
        file=out,
    )
    cols = ["driver", "statements", "failed", "reads checked", "missing rows", "mixed writes"]
    cols.append("lock wait")
    lines = []
    total = Counter()
    for role, r in roles.items():
        failed = sum(r["failed"].values())
        row = [r["statements"], failed, r["reads_checked"], r["missing_rows"], r["mixed_writes"]]
        total.update(dict(zip(cols[1:6], row, strict=True)))
        total["lock wait"] += r["lock_wait_s"]
        lines.append([role, *map(str, row), f"{r['lock_wait_s']:.1f} s"])
    lines.append(["all", *(str(total[c]) for c in cols[1:6]), f"{total['lock wait']:.1f} s"])
    widths = [max(len(c), *(len(ln[i]) for ln in lines)) for i, c in enumerate(cols)]
    for ln in [cols, *lines]:
        pairs = enumerate(zip(ln, widths, strict=True))
        cells = (v.rjust(w) if i else v.ljust(w) for i, (v, w) in pairs)
        print("  ".join(cells), file=out)
    by_class = Counter()
    for r in roles.values():
        by_class.update(r["failed"])
    if by_class:
        print("failed by error class:", file=out)
        for cls, n in by_class.most_common():
            who = ", ".join(
                f"{role} {r['failed'][cls]}" for role, r in roles.items() if cls in r["failed"]
            )
            print(f"  {n:5d}  {cls} ({who})", file=out)
            example = next(r["first_error"][cls] for r in roles.values() if cls in r["failed"])
            example = example.replace(str(work), "<tmp>")
            example = example if len(example) <= 110 else example[:107] + "..."
            print(f"         e.g. {example}", file=out)
    else:
        print("failed by error class: none", file=out)
    wrong = result["wrong"]
    print(
        f"left wrong at the end: {len(wrong)} of {opts.hours} hours"
        + (f" ({'; '.join(wrong)})" if wrong else ""),
        file=out,
        flush=True,
    )


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60, help="length of each run (60)")
    ap.add_argument(
        "--warmup", type=float, default=15, help="uncounted run first, warms the JVMs (15)"
    )
    ap.add_argument("--hours", type=int, default=4, help="hourly partitions (4)")
    ap.add_argument("--rows", type=int, default=20000, help="rows per hour (20000)")
    ap.add_argument("--files", type=int, default=4, help="files per hourly load (4)")
    ap.add_argument("--only", choices=sorted(RUNS), help="one run only")
    ap.add_argument("--quorum", help="use this ZooKeeper instead of starting a local one")
    ap.add_argument("--json", type=Path, help="also write the summaries here")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--namespace",
        default="hive_zookeeper_namespace",
        help="root znode (default: the one of `python -m sparklock locks`)",
    )
    ap.add_argument("--warehouse", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    opts.hour_names = [f"{h:02d}" for h in range(opts.hours)]
    return opts


def main(argv=None) -> int:
    opts = parse_args(argv)
    if opts.driver:
        return driver_main(opts)
    from sparklock.managers.zookeeper.local_server import ZooKeeperServer

    work = Path(tempfile.mkdtemp(prefix="sparklock-pipelines-"))
    server = None
    drivers: list[Driver] = []
    try:
        quorum = opts.quorum
        if not quorum:
            server = ZooKeeperServer(work / "zookeeper").start()
            quorum = server.address
        print(f"ZooKeeper {quorum}; starting {len(ROLES)} Spark drivers ({work})", flush=True)
        drivers = [Driver(role, quorum, opts.namespace, work) for role in ROLES]
        started = time.monotonic()
        for d in drivers:
            d.answer(300)
        print(f"drivers ready after {time.monotonic() - started:.0f} s", flush=True)
        if opts.warmup > 0:  # so that the first run is not the one with cold JVMs
            print(f"warm-up: {opts.warmup:g} s with locks on, not counted", flush=True)
            run_once(drivers, "warmup", "true", opts.warmup, opts, work)
        results = []
        for label, enabled in RUNS.items():
            if opts.only in (None, label):
                results.append(run_once(drivers, label, enabled, opts.seconds, opts, work))
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
        if os.environ.get("SPARKLOCK_PIPELINES_KEEP"):
            print(f"kept {work}")
        else:
            import shutil

            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
