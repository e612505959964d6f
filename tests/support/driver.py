"""A separate Spark driver process for the reliability, stress and metastore tests.

    python -m tests.support.driver [--quorum HOST:PORT --namespace NS] --warehouse DIR [--conf k=v]
                                   [--delta]

A local Spark session with sparklock on the ZooKeeper manager (without ``--quorum``: whatever
manager the ``--conf`` settings name, e.g. the metastore's); ``--delta``: with Delta Lake, as
``tests.support.delta.delta_session`` builds it. It prints ``@@{"ready": true}``
and then runs one JSON command per stdin line, answering one ``@@<json>`` line per command on
stdout (Spark's own output goes to stderr):

* ``{"op": "sql", "sql": "..."}`` -> ``{"ok": true, "rows": [...]}`` or ``{"ok": false, "error"}``
* ``{"op": "bg", "sql": "...", "id": "m"}``: start it on a thread, answer ``{"started": true}`` at
  once; with an ``id``, ``{"op": "result", "id": "m", "timeout": 60}`` later answers what ``sql``
  would have (``{"ok": false, "error": "timeout"}`` if it is still running then)
* ``{"op": "sigint", "sql": "...", "after": 0.5, "when": "job"|"waiting"}``: run it on the main
  thread and send this process SIGINT ``after`` seconds after a job started / a lock wait began
  (PySpark's handler cancels the jobs and raises KeyboardInterrupt)
  -> ``{"interrupted": bool, "error": ..., "elapsed": s}``
* ``{"op": "status"}`` -> open handles, waits in progress, unreleased handles of the service
* ``{"op": "stress_setup", "tables": [...], "location": dir, "first": bool}``: create (and, if
  first, fill) the shared tables of the stress workload -> partitions per table
* ``{"op": "stress", "tables": [...], "threads": 2, "seconds": 20, "seed": 1, "log": path,
  "short_budget": {conf}}``: the stress workload (see :func:`stress`) -> its summary
* ``{"op": "overwrite", "path": p, "batch": "A", "rows": 8, "tasks": 4, "seconds": 0,
  "format": "parquet"}``: overwrite ``p`` (parquet, or ``delta`` with ``--delta``) with a
  recognisable batch (``rows`` rows tagged ``batch``, each task sleeping ``seconds`` per row)
  -> ``{"ok": ..., "error": ...}`` (the nemesis tests)
* ``{"op": "fences"}`` -> the JVM's lease fences so far ``[[handle, nanoTime], ...]`` and its clock
* ``{"op": "exit"}``

UDFs registered: ``slow(x, seconds)`` sleeps then returns ``x``; ``boom(x)`` raises.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
import traceback


def reply(obj: dict) -> None:
    sys.stdout.write("@@" + json.dumps(obj, default=str) + "\n")
    sys.stdout.flush()


def error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def build(args):
    from tests.support.spark import build_session, register_udfs, zookeeper_conf

    conf = zookeeper_conf(args.quorum, args.namespace) if args.quorum else {}
    for kv in args.conf or []:
        k, v = kv.split("=", 1)
        conf[k] = v
    if args.delta:
        from tests.support.delta import delta_session

        spark = delta_session(f"driver-{os.getpid()}", args.warehouse, **conf)
    else:
        spark = build_session(f"driver-{os.getpid()}", args.warehouse, conf=conf)
    register_udfs(spark)
    return spark


def run_sql(spark, sql: str) -> dict:
    try:
        rows = [list(r) for r in spark.sql(sql).collect()]
        return {"ok": True, "rows": rows}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": error_text(e)}


def sigint_during(spark, sql: str, after: float, when: str = "job") -> dict:
    """Run ``sql`` on the main thread; SIGINT this process ``after`` seconds once ``when`` is
    true: ``job`` = a Spark job is running, ``waiting`` = a statement waits for its locks."""
    from sparklock.service import get_service

    tracker = spark.sparkContext.statusTracker()
    done = threading.Event()

    def ready() -> bool:
        if when == "waiting":
            return get_service().waiting() > 0
        return bool(tracker.getActiveJobsIds())

    def fire() -> None:
        deadline = time.monotonic() + 60
        while not done.is_set() and time.monotonic() < deadline:
            if ready():
                if not done.wait(after):
                    sent.set()
                    os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.02)

    sent = threading.Event()

    timer = threading.Thread(target=fire, daemon=True)
    timer.cancel = done.set  # type: ignore[attr-defined]
    start = time.monotonic()
    timer.start()
    try:
        spark.sql(sql).collect()
        return {"interrupted": False, "elapsed": time.monotonic() - start}
    except KeyboardInterrupt:
        elapsed = time.monotonic() - start
        return {"interrupted": True, "via": "KeyboardInterrupt", "elapsed": elapsed}
    except Exception as e:  # noqa: BLE001
        # A SIGINT that lands while py4j reads the JVM's answer breaks that read: pyspark then
        # raises Py4JNetworkError instead of KeyboardInterrupt, or Py4JError from the
        # ``setCallSite`` of collect's cleanup on the broken connection (races inside
        # pyspark/py4j).
        by_signal = sent.is_set() and type(e).__name__ in ("Py4JNetworkError", "Py4JError")
        return {
            "interrupted": by_signal,
            "via": type(e).__name__,
            "error": error_text(e),
            "elapsed": time.monotonic() - start,
        }
    finally:
        timer.cancel()


def overwrite(spark, cmd: dict) -> dict:
    """One writer's batch: ``rows`` rows of ``batch`` over ``tasks`` tasks, overwriting."""
    rows, tasks = int(cmd.get("rows", 8)), int(cmd.get("tasks", 4))
    seconds = float(cmd.get("seconds", 0))
    df = spark.range(rows, numPartitions=tasks).selectExpr(
        f"'{cmd['batch']}' AS batch", f"slow(CAST(id AS INT), {seconds}) AS id"
    )
    try:
        df.write.format(cmd.get("format", "parquet")).mode("overwrite").save(cmd["path"])
        return {"ok": True}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": error_text(e)}


# -- stress -----------------------------------------------------------------------------------
CODES = ("LOCK_CONFLICT",)


def statement(rng: random.Random, tables: list[str]) -> tuple[str, str]:
    """(kind, sql): a random read, static/dynamic insert, overwrite or DDL over the shared tables.

    Every table is ``(v INT, p STRING)`` partitioned by ``p`` in ``('a', 'b', 'c')``."""
    t = rng.choice(tables)
    p = rng.choice("abc")
    kind = rng.choice(
        [
            "read",
            "read",
            "read_part",
            "join",
            "insert_static",
            "insert_dynamic",
            "overwrite",
            "ddl_props",
            "ddl_partition",
            "analyze",
        ]
    )
    if kind == "read":
        return kind, f"SELECT count(*) FROM {t}"
    if kind == "read_part":
        return kind, f"SELECT sum(v) FROM {t} WHERE p = '{p}'"
    if kind == "join":
        u = rng.choice(tables)
        return kind, f"SELECT count(*) FROM {t} x JOIN {u} y ON x.p = y.p"
    if kind == "insert_static":
        return kind, f"INSERT INTO {t} PARTITION (p='{p}') SELECT {rng.randint(0, 99)}"
    if kind == "insert_dynamic":
        return kind, f"INSERT INTO {t} SELECT {rng.randint(0, 99)}, '{p}'"
    if kind == "overwrite":
        # never from the table it overwrites (Spark refuses to overwrite a path it reads)
        u = rng.choice([x for x in tables if x != t] or tables)
        return (
            kind,
            f"INSERT OVERWRITE {t} PARTITION (p='{p}') SELECT v + 1 FROM {u} WHERE p <> '{p}'",
        )
    if kind == "ddl_props":
        return kind, f"ALTER TABLE {t} SET TBLPROPERTIES ('stress'='{rng.randint(0, 9)}')"
    if kind == "ddl_partition":
        return kind, f"ALTER TABLE {t} ADD IF NOT EXISTS PARTITION (p='{p}')"
    return kind, f"ANALYZE TABLE {t} COMPUTE STATISTICS"


def stress_setup(spark, tables: list[str], location: str, first: bool) -> dict:
    """The shared tables: external parquet tables whose files live under ``location``, shared by
    every driver (each driver has its own in-memory catalog, so each registers them itself).
    The ``first`` driver writes the initial rows; the others find its partitions on disk."""
    for t in tables:
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS {t} (v INT, p STRING) USING parquet PARTITIONED BY (p) "
            f"LOCATION '{os.path.join(location, t)}'"
        )
        if first:
            spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        else:
            spark.sql(f"MSCK REPAIR TABLE {t}")
    return {t: spark.sql(f"SHOW PARTITIONS {t}").count() for t in tables}


def stress(
    spark,
    threads: int,
    seconds: float,
    seed: int,
    log: str,
    tables: list[str],
    short_budget: dict | None = None,
) -> dict:
    """``threads`` sessions run random statements for ``seconds``; one JSON line per statement
    (kind, sql, start/end ``monotonic_ns``, outcome, error, budget) goes to ``log``.

    Session 0 uses ``short_budget`` (lock.numRetries / lock.retryInterval) if given, so that the
    LOCK_CONFLICT path runs under load too."""
    end = time.monotonic() + seconds
    out_lock = threading.Lock()
    counts = {"ok": 0, "conflict": 0, "failed": 0}

    def worker(k: int) -> None:
        from sparklock.config import DEFAULTS
        from sparklock.service import config_of

        rng = random.Random(seed * 1000 + k)
        session = spark.newSession()
        if k == 0 and short_budget:
            for key, value in short_budget.items():
                session.conf.set(key, value)
        keys = ("spark.sparklock.lock.numRetries", "spark.sparklock.lock.retryInterval")
        budget = config_of({key: session.conf.get(key, DEFAULTS[key]) for key in keys}).lock.budget
        with open(log, "a", encoding="utf-8") as f:
            while time.monotonic() < end:
                kind, sql = statement(rng, tables)
                t0 = time.monotonic_ns()
                try:
                    session.sql(sql).collect()
                    outcome, err = "ok", None
                except Exception as e:  # noqa: BLE001
                    text = error_text(e)
                    outcome = "conflict" if "LOCK_CONFLICT" in text else "failed"
                    err = text[:2000]
                t1 = time.monotonic_ns()
                rec = {
                    "pid": os.getpid(),
                    "thread": k,
                    "kind": kind,
                    "sql": sql,
                    "start": t0,
                    "end": t1,
                    "outcome": outcome,
                    "error": err,
                    "budget": budget,
                }
                with out_lock:
                    counts[outcome] += 1
                    f.write(json.dumps(rec) + "\n")
                    f.flush()

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return counts


class Driver:
    """The test side: starts ``python -m tests.support.driver`` and talks to it."""

    def __init__(
        self,
        quorum: str | None,
        namespace: str | None,
        warehouse: str,
        conf: dict | None = None,
        env: dict | None = None,
        start_timeout: float = 120.0,
        new_session: bool = False,
        delta: bool = False,
    ) -> None:
        """``new_session``: the driver (Python, its JVM, its workers) in a process group of its
        own, which a test may stop and continue as a whole. ``delta``: a Delta Lake session."""
        import queue
        import subprocess
        from pathlib import Path

        repo = Path(__file__).resolve().parents[2]
        cmd = [sys.executable, "-m", "tests.support.driver", "--warehouse", warehouse]
        if quorum is not None:  # None: the manager the conf names
            cmd += ["--quorum", quorum, "--namespace", namespace or ""]
        if delta:  # a session with Delta Lake (tests.support.delta)
            cmd.append("--delta")
        for k, v in (conf or {}).items():
            cmd += ["--conf", f"{k}={v}"]
        if delta:
            cmd.append("--delta")
        self.stderr_path = os.path.join(warehouse, f"driver-{time.time_ns()}.err")
        os.makedirs(warehouse, exist_ok=True)
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(repo), **(env or {})},
            text=True,
            start_new_session=new_session,
        )
        self._replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready = self.next(start_timeout)

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("@@"):
                self._replies.put(json.loads(line[2:]))
        self._replies.put(None)

    def next(self, timeout: float) -> dict:
        import queue

        try:
            got = self._replies.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(
                f"driver did not answer in {timeout}s; see {self.stderr_path}"
            ) from None
        if got is None:
            raise RuntimeError(f"driver exited ({self.proc.poll()}); see {self.stderr_path}")
        return got

    def send(self, cmd: dict, timeout: float = 120.0) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.next(timeout)

    def sql(self, sql: str, timeout: float = 120.0) -> dict:
        return self.send({"op": "sql", "sql": sql}, timeout)

    def ok(self, sql: str, timeout: float = 120.0) -> list:
        """The rows of ``sql``, which must succeed (the failure names the statement)."""
        answer = self.sql(sql, timeout)
        assert answer["ok"], f"{sql}: {answer.get('error')}"
        return answer["rows"]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send({"op": "exit"}, 60)
                self.proc.wait(60)
            except Exception:  # noqa: BLE001
                self.kill()
        self._err.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quorum")
    ap.add_argument("--namespace")
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--conf", action="append")
    ap.add_argument("--delta", action="store_true")
    args = ap.parse_args(argv)
    spark = build(args)
    reply({"ready": True, "pid": os.getpid()})
    background: dict[str, tuple[threading.Event, dict]] = {}  # bg statements by id

    def run_bg(sql: str, done: threading.Event, result: dict) -> None:
        result.update(run_sql(spark, sql))
        done.set()

    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        op = cmd.get("op")
        try:
            if op == "sql":
                reply(run_sql(spark, cmd["sql"]))
            elif op == "bg":
                done, result = threading.Event(), {}
                if "id" in cmd:
                    background[str(cmd["id"])] = (done, result)
                args = (cmd["sql"], done, result)
                threading.Thread(target=run_bg, args=args, daemon=True).start()
                reply({"started": True})
            elif op == "result":
                done, result = background[str(cmd["id"])]
                finished = done.wait(float(cmd.get("timeout", 60)))
                reply(result if finished else {"ok": False, "error": "timeout"})
            elif op == "sigint":
                reply(
                    sigint_during(
                        spark, cmd["sql"], float(cmd.get("after", 1.0)), cmd.get("when", "job")
                    )
                )
            elif op == "status":
                from sparklock.service import get_service

                svc = get_service()
                reply(
                    {
                        "open": svc.open_handles(),
                        "waiting": svc.waiting(),
                        "unreleased": svc.unreleased(),
                    }
                )
            elif op == "stress_setup":
                reply(stress_setup(spark, cmd["tables"], cmd["location"], bool(cmd["first"])))
            elif op == "stress":
                reply(
                    stress(
                        spark,
                        int(cmd.get("threads", 2)),
                        float(cmd.get("seconds", 10)),
                        int(cmd.get("seed", 1)),
                        cmd["log"],
                        cmd["tables"],
                        cmd.get("short_budget"),
                    )
                )
            elif op == "overwrite":
                reply(overwrite(spark, cmd))
            elif op == "fences":
                jvm = spark.sparkContext._jvm
                text = jvm.io.sparklock.shim.SparkLockBridge.leaseFences()
                fences = [line.split() for line in text.splitlines() if line]
                reply({"fences": [[h, int(t)] for h, t in fences], "now": time.monotonic_ns()})
            elif op == "exit":
                reply({"bye": True})
                break
            else:
                reply({"ok": False, "error": f"unknown op {op!r}"})
        except BaseException as e:  # noqa: BLE001 - report, keep serving
            reply({"ok": False, "error": error_text(e), "trace": traceback.format_exc()})
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
