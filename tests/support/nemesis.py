"""Faults against a writer that holds ZooKeeper locks, and the checker of what they leave.

Two writer drivers (separate processes, ``tests.support.driver``) overwrite one parquet path with
recognisable batches: A holds its EXCLUSIVE lock over slow tasks when a fault hits it (its
Python stopped, its whole process group stopped until its job is about to commit, its link to
ZooKeeper cut); once ZooKeeper has expired A's session, B overwrites the path. The checker reads
the files (pyarrow, a reader apart from Spark) and asks: is the path exactly B's complete batch,
and did A's statement fail with ``LOCKS_LOST``?

Measured per trial: the fence lead time, the instant a watcher saw A's lock znodes vanish (the
server's expiry of A's session, seen a few ms late) minus the instant A's JVM fenced (its
``Lease.fences()``, ``System.nanoTime()``: the monotonic clock every process here shares).
Positive: the JVM stopped before anyone else could take the lock.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.driver import Driver
from tests.support.zk_tree import inspecting, znodes

#: The session timeout of the nemesis drivers (short: each fault waits for an expiry).
SESSION_TIMEOUT = "4s"
#: Writer A: 4 tasks of 2 rows, ``A_SECONDS`` per row; on 2 cores two waves of 2 tasks.
A_ROWS, A_TASKS, A_SECONDS = 8, 4, 1.5
B_ROWS = 4


def trials() -> int:
    """``SPARKLOCK_NEMESIS_TRIALS`` (default 1): trials per fault."""
    return max(1, int(os.environ.get("SPARKLOCK_NEMESIS_TRIALS", "1")))


def driver_conf(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"spark.sparklock.zookeeper.sessionTimeout": SESSION_TIMEOUT, **(extra or {})}


def start_drivers(specs: list[dict]) -> list[Driver]:
    """Start drivers in parallel (each ``Driver(**spec)``); all or none."""
    out: list[Driver | BaseException | None] = [None] * len(specs)

    def start(k: int) -> None:
        try:
            out[k] = Driver(**specs[k])
        except BaseException as e:  # noqa: BLE001 - reported below
            out[k] = e

    threads = [threading.Thread(target=start, args=(k,)) for k in range(len(specs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [d for d in out if isinstance(d, BaseException)]
    if failed:
        for d in out:
            if isinstance(d, Driver):
                d.kill()
        raise failed[0]
    return out  # type: ignore[return-value]


def submit(driver: Driver, cmd: dict) -> None:
    """Send a command without waiting for its answer (``driver.next`` reads it later)."""
    import json

    driver.proc.stdin.write(json.dumps(cmd) + "\n")
    driver.proc.stdin.flush()


def read_batches(path: Path, fmt: str = "parquet") -> Counter:
    """Rows per batch in the parquet files of ``path`` (files Spark's committer would not
    publish, ``_``/``.``-prefixed, are skipped as Spark's reader skips them); for ``delta``,
    in the files its newest version holds (:func:`delta_files`)."""
    import pyarrow.dataset as ds

    if not path.exists():
        return Counter()
    source = [str(f) for f in delta_files(path)] if fmt == "delta" else str(path)
    if not source:
        return Counter()
    dataset = ds.dataset(source, format="parquet")
    if not dataset.files:  # a failed overwrite after its delete leaves the directory alone
        return Counter()
    table = dataset.to_table(columns=["batch"])
    return Counter(table.column("batch").to_pylist())


def delta_files(path: Path) -> list[Path]:
    """The data files of a Delta table's newest version: its log's ``add`` actions minus its
    ``remove`` actions, commit by commit (the few commits here leave no checkpoint)."""
    import json
    from urllib.parse import unquote

    live: set[str] = set()
    for commit in sorted((path / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live.add(unquote(action["add"]["path"]))
            elif "remove" in action:
                live.discard(unquote(action["remove"]["path"]))
    return sorted(path / f for f in live)


@dataclass
class ExpiryWatch:
    """The instant a watcher saw the first of A's lock znodes vanish (its session expired)."""

    gone_ns: int | None = None
    paths: list[str] = field(default_factory=list)
    _event: threading.Event = field(default_factory=threading.Event)

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)

    def seen(self, _event=None) -> None:
        if self.gone_ns is None:
            self.gone_ns = time.monotonic_ns()
        self._event.set()


def watch_locks(client, root: str, timeout: float = 60.0) -> ExpiryWatch:
    """Wait until lock znodes exist under ``root`` (A holds its lock), then watch them."""
    watch = ExpiryWatch()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        locks = [p for p, (_, stat) in znodes(client, root, locks_only=True).items()]
        if locks:
            watch.paths = locks
            for p in locks:
                if client.exists(p, watch=watch.seen) is None:
                    watch.seen()
            return watch
        time.sleep(0.05)
    raise TimeoutError(f"no lock appeared under {root} within {timeout}s")


def wait_for_job(path: Path, fmt: str = "parquet", timeout: float = 60.0) -> None:
    """Until the writer's job has set up its staging under ``path`` (after its grant); Delta
    stages nothing: until its tasks have opened their first data files."""

    def started() -> bool:
        if fmt == "delta":
            return path.is_dir() and any(p.name.startswith("part-") for p in path.iterdir())
        return (path / "_temporary").exists()

    deadline = time.monotonic() + timeout
    while not started():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no job staged under {path} within {timeout}s")
        time.sleep(0.05)


@dataclass
class Trial:
    """What one fault left: A's and B's answers, the data, the instants."""

    fault: str
    a: dict
    b: dict
    final: Counter
    expired_ns: int | None
    fences_ns: list[int]

    @property
    def lead_ms(self) -> float | None:
        """Expiry minus A's first fence (ms); positive: fenced first. None: no fence."""
        if self.expired_ns is None or not self.fences_ns:
            return None
        return (self.expired_ns - min(self.fences_ns)) / 1e6

    def violations(self) -> list[str]:
        out = []
        if self.final != Counter({"B": B_ROWS}):
            out.append(f"the path holds {dict(self.final)}, not B's {B_ROWS} rows alone")
        if self.a.get("ok") or "LOCKS_LOST" not in str(self.a.get("error")):
            out.append(f"A's fenced statement did not fail with LOCKS_LOST: {self.a}")
        if not self.b.get("ok"):
            out.append(f"B's overwrite failed: {self.b}")
        return out

    def line(self) -> str:
        lead = "-" if self.lead_ms is None else f"{self.lead_ms:+.0f} ms"
        return f"nemesis {self.fault}: fence lead {lead}, final {dict(self.final)}"


def report(fault: str, trials: list[Trial]) -> list[str]:
    """The violations of ``trials``, each printed whole (a CI log then says why), then a summary."""
    bad = [f"{t.fault}: {v}" for t in trials for v in t.violations()]
    for why in bad:
        print(f"nemesis violation {why}")
    leads = [t.lead_ms for t in trials]
    print(f"nemesis {fault}: {len(trials)} trial(s), {len(bad)} violation(s), leads ms {leads}")
    return bad


def pause_trial(
    fault: str,
    zk_address: str,
    namespace: str,
    work: Path,
    *,
    a_quorum: str | None = None,
    a_conf: dict[str, str] | None = None,
    inflict=None,
    heal=None,
    fmt: str = "parquet",
    a_seconds: float = A_SECONDS,
    warm: bool = False,
) -> Trial:
    """A overwrites slowly, ``inflict(a_driver)`` hits it, B overwrites once A's session expired,
    ``heal(a_driver)``; then A's answer and the data are collected.

    ``inflict`` runs once A holds its lock; ``heal`` once B has committed and A's tasks would have
    finished (so that A's job, unless fenced, would have tried to commit). ``fmt="delta"``: both
    drivers have Delta and overwrite a Delta table (its newest version is what is checked);
    ``a_seconds``: how long A's tasks take per row (its job, unfenced, runs four times that);
    ``warm``: both drivers run the slow UDF once first, so that A's tasks start at once rather
    than after Spark's Python workers (seconds on a loaded machine)."""
    path = work / "target"
    a, b = start_drivers(
        [
            dict(
                quorum=a_quorum or zk_address,
                namespace=namespace,
                warehouse=str(work / "a"),
                conf=driver_conf(a_conf),
                new_session=True,
                delta=fmt == "delta",
            ),
            dict(
                quorum=zk_address,
                namespace=namespace,
                warehouse=str(work / "b"),
                conf=driver_conf(),
                delta=fmt == "delta",
            ),
        ]
    )
    try:
        for d in (a, b) if warm else ():
            d.send({"op": "sql", "sql": "SELECT slow(1, 0)"}, 120)
        with inspecting(zk_address) as zk:
            cmd = {"op": "overwrite", "path": str(path), "batch": "A", "rows": A_ROWS}
            submit(a, {**cmd, "tasks": A_TASKS, "seconds": a_seconds, "format": fmt})
            watch = watch_locks(zk, "/" + namespace)
            wait_for_job(path, fmt)  # granted, and its job set up: A writes under its lock
            started = time.monotonic()
            inflict(a)
            if not watch.wait(30):
                raise AssertionError(f"A's session did not expire; locks {watch.paths}")
            cmd = {"op": "overwrite", "path": str(path), "batch": "B", "rows": B_ROWS}
            b_answer = b.send({**cmd, "format": fmt})
            # A's job, unfenced, would be done by now: 2 waves of 2 rows per task
            job = 2 * 2 * a_seconds + 1.0
            time.sleep(max(0.0, started + job - time.monotonic()))
            heal(a)
            a_answer = a.next(120)
            fences = a.send({"op": "fences"}, 60)["fences"]
        return Trial(
            fault,
            a_answer,
            b_answer,
            read_batches(path, fmt),
            watch.gone_ns,
            [t for _, t in fences],
        )
    finally:
        for d in (a, b):
            _continue(d)
            d.close()


def _continue(driver: Driver) -> None:
    try:
        os.killpg(driver.proc.pid, signal.SIGCONT)
    except OSError:
        pass


def stop_python(driver: Driver) -> None:
    os.kill(driver.proc.pid, signal.SIGSTOP)


def continue_python(driver: Driver) -> None:
    os.kill(driver.proc.pid, signal.SIGCONT)


def stop_group(driver: Driver) -> None:
    os.killpg(driver.proc.pid, signal.SIGSTOP)


def continue_group(driver: Driver) -> None:
    os.killpg(driver.proc.pid, signal.SIGCONT)


#: What a statement may fail with while the ensemble fails over (anything else is a violation).
FAILOVER_CODES = ("LOCKS_LOST", "LOCK_MANAGER_UNAVAILABLE", "LOCK_CONFLICT")


@dataclass
class Churn:
    """Writers overwriting in turn while the ensemble's leader is killed."""

    answers: dict[str, dict]  # batch -> its statement's answer
    rows: dict[str, int]  # batch -> rows written
    final: Counter
    killed: str

    def violations(self) -> list[str]:
        out = []
        if not self.final:
            if not self.emptied_by_the_last_holder():
                out.append("the path holds no batch, yet no statement lost its lock last")
        elif len(self.final) != 1:
            out.append(f"the path holds {dict(self.final)}: not exactly one batch")
        else:
            ((batch, count),) = self.final.items()
            if count != self.rows.get(batch):
                out.append(f"batch {batch} has {count} rows of {self.rows.get(batch)}")
            elif not self.answers.get(batch, {}).get("ok"):
                out.append(f"batch {batch} is visible but its statement failed")
        for batch, answer in self.answers.items():
            error = str(answer.get("error"))
            if not answer.get("ok") and not any(c in error for c in FAILOVER_CODES):
                out.append(f"{batch} failed with something else: {error[:300]}")
        return out

    def emptied_by_the_last_holder(self) -> bool:
        """Whether a statement that lost its lock ended after every successful one: Spark's
        overwrite deletes the old data before its job, so the last holder fenced after that
        delete leaves the path empty (a statement that never got its lock deletes nothing)."""
        lost = [a["ended"] for a in self.answers.values() if "LOCKS_LOST" in str(a.get("error"))]
        done = [a["ended"] for a in self.answers.values() if a.get("ok")]
        return bool(lost) and max(lost) > max(done, default=float("-inf"))

    def line(self) -> str:
        failed = {b: str(a.get("error"))[:40] for b, a in self.answers.items() if not a.get("ok")}
        return f"nemesis leader-killed ({self.killed}): final {dict(self.final)}, failed {failed}"


def leader(ensemble) -> object | None:
    from tests.support.zookeeper import four_letter

    for server in ensemble.servers:
        try:
            if "Mode: leader" in four_letter(server.port, "srvr"):
                return server
        except OSError:
            continue
    return None


def churn_trial(ensemble, namespace: str, work: Path, rounds: int = 3) -> Churn:
    """A and B each overwrite ``rounds`` times (their own batch sizes); the leader is killed
    once A holds its first lock. The ensemble keeps its other two servers (a quorum)."""
    path = work / "target"
    drivers = start_drivers(
        [
            dict(
                quorum=ensemble.address,
                namespace=namespace,
                warehouse=str(work / name),
                conf=driver_conf(),
            )
            for name in ("a", "b")
        ]
    )
    answers: dict[str, dict] = {}
    rows = {f"{name}{k}": size + k for name, size in (("A", 6), ("B", 4)) for k in range(rounds)}

    def writer(driver: Driver, name: str) -> None:
        for k in range(rounds):
            batch = f"{name}{k}"
            cmd = {"op": "overwrite", "path": str(path), "batch": batch, "rows": rows[batch]}
            answer = driver.send({**cmd, "tasks": 2, "seconds": 0.3}, 180)
            answers[batch] = {**answer, "ended": time.monotonic()}

    try:
        pairs = zip(drivers, ("A", "B"), strict=True)
        threads = [threading.Thread(target=writer, args=pair) for pair in pairs]
        with inspecting(ensemble.address) as zk:
            threads[0].start()
            watch_locks(zk, "/" + namespace)
            threads[1].start()
            time.sleep(0.5)  # B queued behind A: grants and releases under way
            victim = leader(ensemble)
            if victim is None:
                raise AssertionError("no ensemble member says it leads")
            victim.stop(kill=True)
        for t in threads:
            t.join(600)
        return Churn(answers, rows, read_batches(path), victim.address)
    finally:
        for d in drivers:
            d.close()
