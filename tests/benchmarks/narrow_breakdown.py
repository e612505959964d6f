"""Where a narrow locked statement's time goes: JVM, py4j, Python, ZooKeeper, thread hand-offs.

Not one of the numbered benchmarks (``run.py``): a diagnostic for issue 11. It runs benchmark 4's
pruned read and partitioned INSERT on one local session, each locked round paired with an
unlocked one, per manager (``embedded,zookeeper`` by default), and times the pieces of the locked
runs from both ends:

* the JVM's own view (``ShimProbes.timingStats``): facts + JSON, the acquire call into
  Python, the re-listing check after the grant, the release as the action thread waits for it and
  the release call itself on the release thread;
* Python, by wrapping its entry points for the run (``PyLockCallback.acquire/release``, the
  service, the manager) -- the gap between a call's JVM wall time and Python's time inside it is
  py4j and the scheduling of the threads at both ends;
* each ZooKeeper request on kazoo's connection thread: the hand-off from the calling thread to
  kazoo's thread, the wait for the answer (ZooKeeper's turnaround, fsync included, and the wire),
  and the hand-off of the answer back to the calling thread.

    python3 -m tests.benchmarks.narrow_breakdown [embedded,zookeeper] [rounds]

Figures are per statement (medians; the ZooKeeper rows per request). Wrapping costs a few
microseconds a call, in the locked runs only.
"""

from __future__ import annotations

import collections
import logging
import shutil
import statistics
import sys
import tempfile
import threading
import time

from tests.support.spark import build_session

from . import common

STATEMENTS = {
    "pruned SELECT": "SELECT count(*), sum(v) FROM src WHERE ds = 'd07'",
    "partitioned INSERT": (
        "INSERT OVERWRITE TABLE dst PARTITION (ds = 'x') SELECT id, v FROM src WHERE ds = 'd03'"
    ),
}
WARMUP = 10

#: name -> samples (ms) of the current block
samples: dict[str, list[float]] = collections.defaultdict(list)
_now = time.perf_counter
#: the last callbacks' entry and exit on Python's side (time.monotonic_ns, the JVM's nanoTime)
python_stamps: dict[str, tuple[int, int]] = {}


def _timed(cls: type, name: str, key: str) -> None:
    original = getattr(cls, name)

    def wrapper(*args, **kwargs):
        start = _now()
        try:
            return original(*args, **kwargs)
        finally:
            samples[key].append((_now() - start) * 1000)

    setattr(cls, name, wrapper)


def _stamped(cls: type, name: str) -> None:
    original = getattr(cls, name)

    def wrapper(*args, **kwargs):
        entered = time.monotonic_ns()
        try:
            return original(*args, **kwargs)
        finally:
            python_stamps[name] = (entered, time.monotonic_ns())

    setattr(cls, name, wrapper)


def after_statement(spark, before: dict[str, int]) -> dict[str, int]:
    """After a locked statement: its JVM pieces (differences of the JVM's sums), and how long each
    call took to reach Python and its answer to come back (JVM stamps against Python's, one
    monotonic clock). Returns the JVM's sums for the next statement."""
    jvm = jvm_stats(spark)
    for label, key, count in JVM_ROWS:
        if jvm[count] > before[count]:
            samples[label].append((jvm[key] - before[key]) / 1000)
    for name in ("acquire", "release"):
        entered, left = python_stamps.pop(name, (0, 0))
        sent, answered = jvm[f"last{name.title()}Sent"], jvm[f"last{name.title()}Answered"]
        if entered and sent <= entered <= left <= answered:
            samples[f"py4j: {name} call reaches Python"].append((entered - sent) / 1e6)
            samples[f"py4j: {name} answer reaches the JVM"].append((answered - left) / 1e6)
    return jvm


def instrument() -> None:
    """Wrap the Python pieces (before any ZooKeeper client exists: clock.py wraps ``_call``)."""
    from kazoo.client import KazooClient
    from kazoo.protocol import connection

    from sparklock.managers.zookeeper.manager import ZooKeeperLockManager
    from sparklock.managers.zookeeper.wire import coalescing
    from sparklock.managers.zookeeper.wire.clock import WriteClock
    from sparklock.service.coordinator import LockService
    from sparklock.spark.callback import PyLockCallback

    _timed(PyLockCallback, "acquire", "py: acquire callback")
    _timed(PyLockCallback, "release", "py: release callback")
    for name in ("acquire", "release"):
        _stamped(PyLockCallback, name)
    _timed(LockService, "acquire", "py:   service acquire")
    _timed(LockService, "_read_epochs", "py:   read epochs")
    _timed(LockService, "release", "py:   service release")
    _timed(WriteClock, "reading", "py:   ZooKeeper clock reading")
    _timed(ZooKeeperLockManager, "_acquire_queued", "py:     manager acquire")
    _timed(ZooKeeperLockManager, "release", "py:     manager release")

    queued: dict[int, float] = {}  # id(request) -> handed to kazoo
    sent: dict[int, float] = {}  # id(request) -> written to the socket by kazoo's thread
    answered: dict[int, float] = {}  # id(member) -> its last answer handed out
    local = threading.local()

    original_call = KazooClient._call

    def call(self, request, async_object):
        queued[id(request)] = _now()
        return original_call(self, request, async_object)

    KazooClient._call = call  # type: ignore[method-assign]

    original_send = connection.ConnectionHandler._send_request

    def send_request(self, read_timeout, connect_timeout):
        start = _now()
        try:
            return _send_request(self, read_timeout, connect_timeout, start)
        finally:
            samples["zk: kazoo's thread sends (serialize, write)"].append((_now() - start) * 1000)

    def _send_request(self, read_timeout, connect_timeout, start):
        pending = self.client._queue
        request = pending[0][0] if pending else None
        if request is not None and id(request) in queued:
            samples["zk: hand-off to kazoo's thread"].append(
                (start - queued.pop(id(request))) * 1000
            )
        result = original_send(self, read_timeout, connect_timeout)
        if request is not None:
            sent[id(request)] = _now()
        return result

    connection.ConnectionHandler._send_request = send_request  # type: ignore[method-assign]

    original_read = connection.ConnectionHandler._read_response

    def read_response(self, header, buffer, offset):
        pending = self.client._pending
        if pending and id(pending[0][0]) in sent:
            kind = type(pending[0][0]).__name__
            waited = (_now() - sent.pop(id(pending[0][0]))) * 1000
            samples[f"zk: answer of a {kind} (server, wire)"].append(waited)
        return original_read(self, header, buffer, offset)

    connection.ConnectionHandler._read_response = read_response  # type: ignore[method-assign]

    member_init = coalescing._Member.__init__

    def init(self, *args, **kwargs):
        member_init(self, *args, **kwargs)
        local.member = self

    coalescing._Member.__init__ = init  # type: ignore[method-assign]
    for name in ("answer", "answer_reads"):
        original = getattr(coalescing._Member, name)

        def stamped(self, *args, _original=original):
            _original(self, *args)
            if self.done.is_set():
                answered[id(self)] = _now()

        setattr(coalescing._Member, name, stamped)
    original_submit = coalescing.Lane.submit

    def submit(self, client, ops, size, timeout, reads=None):
        start = _now()
        try:
            return original_submit(self, client, ops, size, timeout, reads)
        finally:
            end = _now()
            member = getattr(local, "member", None)
            if member is not None and id(member) in answered:
                woken = (end - answered.pop(id(member))) * 1000
                samples["zk: hand-off of the answer back"].append(woken)
            kind = "write + pipelined read" if reads else "write"
            samples[f"zk: round trip ({kind}), caller's view"].append((end - start) * 1000)

    coalescing.Lane.submit = submit  # type: ignore[method-assign]


def jvm_stats(spark) -> dict[str, int]:
    text = spark.sparkContext._jvm.io.sparklock.shim.ShimProbes.timingStats()
    return {k: int(v) for k, v in (part.split("=") for part in str(text).split())}


def set_mode(spark, mode: str) -> None:
    if mode == "unlocked":
        spark.conf.set("spark.sparklock.enabled", "false")
    else:
        spark.conf.set("spark.sparklock.enabled", "true")
        spark.conf.set("spark.sparklock.manager", mode)


JVM_ROWS = (
    ("jvm: facts + JSON", "facts", "acquires"),
    ("jvm: acquire call (waits for Python)", "acquire", "acquires"),
    ("jvm: re-listing check after the grant", "afterGrant", "acquires"),
    ("jvm: release (action thread waits)", "release", "releases"),
    ("jvm:   release call (release thread)", "releaseCall", "releases"),
)


def block(spark, sql: str, mode: str, rounds: int) -> list[tuple[str, float, int]]:
    """One manager against the unlocked run, paired round by round; the breakdown rows."""
    pairs: list[tuple[float, float]] = []
    before: dict[str, int] | None = None
    for i in range(WARMUP + rounds):
        if i == WARMUP:
            samples.clear()
            before = jvm_stats(spark)
        assert before is not None or i < WARMUP
        timing = {}
        for m in ("unlocked", mode) if i % 2 else (mode, "unlocked"):
            set_mode(spark, m)
            start = _now()
            spark.sql(sql).collect()
            timing[m] = (_now() - start) * 1000
        if i >= WARMUP:
            pairs.append((timing[mode], timing["unlocked"]))
            before = after_statement(spark, before)
    med = statistics.median
    rows = [
        ("statement, unlocked", med([u for _, u in pairs]), len(pairs)),
        ("statement, locked", med([t for t, _ in pairs]), len(pairs)),
        ("locked - unlocked (paired)", med([t - u for t, u in pairs]), len(pairs)),
    ]
    for key in sorted(samples):
        rows.append((key, med(samples[key]), len(samples[key])))
    return rows


def run(modes: list[str], rounds: int) -> None:
    instrument()
    logging.getLogger("py4j").setLevel(logging.WARNING)
    warehouse = tempfile.mkdtemp(prefix="sparklock-breakdown-")
    try:
        with common.zookeeper() as zk:
            conf = {
                "spark.sparklock.zookeeper.quorum": zk.address,
                "spark.sparklock.zookeeper.namespace": "breakdown",
            }
            common.warm_server(zk)  # the server's JIT (see bench_spark)
            spark = build_session("breakdown", warehouse, conf=conf)
            try:
                set_mode(spark, "unlocked")
                for t in ("src", "dst"):
                    spark.sql(
                        f"CREATE TABLE {t} (id INT, v DOUBLE, ds STRING) USING parquet "
                        "PARTITIONED BY (ds)"
                    )
                spark.sql(
                    "INSERT INTO src SELECT id, id * 1.5, concat('d', lpad(cast(id % 24 AS "
                    "STRING), 2, '0')) FROM range(24000)"
                )
                for label, sql in STATEMENTS.items():
                    for mode in modes:
                        rows = block(spark, sql, mode, rounds)
                        common.print_table(
                            f"{label}, {mode}: ms per statement (medians; zk: per request)",
                            ["piece", "ms", "n"],
                            [[name, f"{ms:.3f}", str(n)] for name, ms, n in rows],
                        )
            finally:
                spark.stop()
                from sparklock.managers import close_all

                close_all()
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    run(
        (sys.argv[1] if len(sys.argv) > 1 else "embedded,zookeeper").split(","),
        int(sys.argv[2]) if len(sys.argv) > 2 else 30,
    )
