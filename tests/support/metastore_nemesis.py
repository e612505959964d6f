"""Faults against a driver holding Hive metastore locks while it writes (the metastore manager).

The scenario of ``tests.support.nemesis``, on the metastore: writer A holds its EXCLUSIVE lock
over slow tasks when its Python is stopped (SIGSTOP: no heartbeat leaves the process, its JVM
writes on), or its link to the metastore goes silent (a proxy drops every byte: its heartbeats
hang until the client's read timeout, its Python runs on); once the metastore's housekeeper has
expired A's lock request (no heartbeat for ``metastore.txn.timeout``, 10 s here), writer B
overwrites the same data; then A continues (or its link heals). The checker (``nemesis.Trial``)
asks whether the data is B's complete batch alone and A's statement failed with ``LOCKS_LOST``.

Measured per trial: the fence lead, the instant a watcher saw A's request vanish from
``show_locks`` (polled every 50 ms) minus the instant A's JVM fenced.
"""

from __future__ import annotations

import time
from pathlib import Path

from sparklock.managers.metastore.client import MetastoreClient
from tests.support import nemesis
from tests.support.driver import Driver
from tests.support.tcp_proxy import TcpProxy

#: A's rows, one per task, ``A_SECONDS`` each: on 2 cores its job runs 5 waves of 5 s, well
#: past the metastore's expiry of a request whose heartbeats stopped (at most timeout +
#: interval + the housekeeper's 1 s after the stop, 14.4 s here) and B's overwrite after it.
#: Unfenced, A's last waves start after B's commit (B's overwrite deleted what A's earlier tasks
#: had staged) and A's job commit publishes them next to B's batch: the issue's violation.
A_ROWS, A_SECONDS = 10, 5.0
#: How long A's job runs unfenced; A continues this much later (a few seconds more: once
#: continued, A's Python would fence what still runs, hiding the JVM's part).
A_JOB = A_ROWS / 2 * A_SECONDS
A_RESUME = A_JOB + 8.0
#: Queue for up to 60 s (B waits behind A's lock until the metastore expires it).
PATIENT = {"spark.sparklock.lock.numRetries": "600", "spark.sparklock.lock.retryInterval": "100ms"}


def start(uri: str, work: Path, a_uri: str | None = None) -> tuple[Driver, Driver]:
    """Writers A (a process group of its own; through ``a_uri``, a proxy, when given) and B on
    the metastore manager at ``uri``, each with a local catalog: tables registered under the
    same names lock the same objects."""

    def conf(at: str) -> dict[str, str]:
        manager = {"spark.sparklock.manager": "metastore", "spark.sparklock.metastore.uris": at}
        return {**manager, **PATIENT}

    specs = [
        dict(
            quorum=None,
            namespace=None,
            warehouse=str(work / n),
            conf=conf(a_uri or uri if n == "a" else uri),
            new_session=n == "a",
        )
        for n in ("a", "b")
    ]
    a, b = nemesis.start_drivers(specs)
    for d in (a, b):  # a first write warmed up: B's overwrite in a trial takes seconds, not ten
        answer = d.send(overwrite(work / f"warm-{id(d)}", "W", 2), 120)
        assert answer.get("ok"), answer
    return a, b


class RequestWatch:
    """A's lock requests (those that appear after :meth:`__init__`), and when they vanished."""

    def __init__(self, uri: str) -> None:
        self.client = MetastoreClient(uri, timeout=10.0)
        self.before = {r.lockid for r in self.client.show_locks()}
        self.mine: set[int] = set()
        self.gone_ns: int | None = None

    def held(self, timeout: float = 60.0) -> set[int]:
        """Until a new request is ACQUIRED (A holds its locks)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.client.show_locks()
            self.mine = {r.lockid for r in rows if r.lockid not in self.before and r.state == 1}
            if self.mine:
                return self.mine
            time.sleep(0.05)
        raise TimeoutError(f"A held no metastore lock within {timeout}s")

    def wait_gone(self, timeout: float = 40.0) -> bool:
        """Until every one of A's requests is gone (expired by the housekeeper)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.mine & {r.lockid for r in self.client.show_locks()}:
                self.gone_ns = time.monotonic_ns()
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self.client.close()


def fault_trial(
    fault: str,
    a: Driver,
    b: Driver,
    path: Path,
    a_cmd: dict,
    b_cmd: dict,
    watch: RequestWatch,
    link: TcpProxy | None = None,
) -> nemesis.Trial:
    """A runs ``a_cmd`` (a command of ``tests.support.driver``) and its Python is stopped once
    its job staged under ``path`` (or, given A's ``link``, that link silenced); B runs ``b_cmd``
    once the metastore expired A's requests (those ``watch`` sees appear: made before A's
    explicit locks, if any); A continues (its link heals) when its job, unfenced, would have
    ended."""
    fault_on = link.silence if link else lambda: nemesis.stop_python(a)
    fault_off = link.heal if link else lambda: nemesis.continue_python(a)
    try:
        nemesis.submit(a, a_cmd)
        watch.held()
        nemesis.wait_for_job(path)  # granted, and its job set up: A writes under its lock
        started = time.monotonic()
        since = time.monotonic_ns()
        fault_on()
        if not watch.wait_gone():
            raise AssertionError(f"the metastore did not expire A's requests {watch.mine}")
        b_answer = b.send(b_cmd, 120)
        time.sleep(max(0.0, started + A_RESUME - time.monotonic()))
        fault_off()
        a_answer = a.next(120)
        fences = a.send({"op": "fences"}, 60)["fences"]
    finally:
        fault_off()
        watch.close()
    return nemesis.Trial(
        fault,
        a_answer,
        b_answer,
        nemesis.read_batches(path),
        watch.gone_ns,
        [t for _, t in fences if t >= since],
    )


def overwrite(path: Path, batch: str, rows: int, seconds: float = 0.0) -> dict:
    """The driver command overwriting ``path`` (parquet) with ``rows`` rows of ``batch``."""
    return {
        "op": "overwrite",
        "path": str(path),
        "batch": batch,
        "rows": rows,
        "tasks": rows if seconds else 2,
        "seconds": seconds,
    }


def insert_overwrite(table: str, batch: str, rows: int, seconds: float = 0.0) -> dict:
    """The driver command ``INSERT OVERWRITE`` of ``table`` (columns ``batch``, ``id``)."""
    parts = rows if seconds else 2
    sql = (
        f"INSERT OVERWRITE TABLE {table} SELECT '{batch}' AS batch, "
        f"slow(CAST(id AS INT), {seconds}) AS id FROM range(0, {rows}, 1, {parts})"
    )
    return {"op": "sql", "sql": sql}
