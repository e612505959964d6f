"""Drive Hive 4's own metastore lock client (``tests/hive_interop/MetastoreLockHarness``).

The harness is compiled once against the metastore release's class path (cached by the source's
hash) and runs as one JVM that holds Hive's lock requests and transactions between commands.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support import metastore
from tests.support.hive_harness import build_harness

SOURCE = Path(__file__).resolve().parents[1] / "hive_interop" / "MetastoreLockHarness.java"
MAIN_CLASS = "MetastoreLockHarness"


def build(home: Path) -> Path:
    """The harness's class directory (compiled unless this exact source was)."""
    return build_harness(
        home / "harness", source=SOURCE, main_class=MAIN_CLASS, classpath=f"{home / 'lib'}/*"
    )


@dataclass(frozen=True)
class HiveRequest:
    """A Hive statement's lock request as the metastore answered it."""

    lockid: int
    txnid: int
    state: str


@dataclass(frozen=True)
class HiveShowRow:
    lockid: int
    db: str
    table: str | None
    partition: str | None
    state: str
    type: str
    user: str
    host: str
    agent: str


class MetastoreLockHarness:
    """One JVM with Hive's ``HiveMetaStoreClient`` on ``uri``; closed by ``with``/:meth:`close`."""

    def __init__(self, uri: str, version: str = metastore.DEFAULT_VERSION) -> None:
        home = metastore.install(version)
        classes = build(home)
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-cp", f"{classes}:{home / 'lib'}/*", MAIN_CLASS, uri],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1,
        )  # fmt: skip
        self.ask("PING")

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().rstrip("\n")
        if not answer or answer.startswith("ERROR"):
            raise RuntimeError(f"harness: {line!r} -> {answer or 'no answer (exited)'}")
        return answer

    def statement(self, query_id: str, user: str, spec: str, *, txn: bool = True) -> HiveRequest:
        """``spec``: ``db@t@p=1:R,db@t2:X`` (see the Java source for the modes)."""
        _, lockid, txnid, state = self.ask(
            f"STATEMENT {query_id} {user} {'TXN' if txn else 'NOTXN'} {spec}"
        ).split()
        return HiveRequest(int(lockid), int(txnid), state)

    def wait(self, request: HiveRequest, timeout: float) -> bool:
        """DbLockManager's wait; True once granted within ``timeout`` seconds."""
        return self.ask(f"WAIT {request.lockid} {int(timeout * 1000)}").startswith("ACQUIRED")

    def release(self, request: HiveRequest) -> None:
        self.ask(f"RELEASE {request.lockid} {request.txnid}")

    def show(self) -> list[HiveShowRow]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("SHOW\n")
        self.proc.stdin.flush()
        rows = []
        while (line := self.proc.stdout.readline().rstrip("\n")) != "END":
            if not line or line.startswith("ERROR"):
                raise RuntimeError(f"harness: SHOW -> {line or 'no answer'}")
            f = [None if v == "null" else v for v in line.split("\t")]
            rows.append(HiveShowRow(int(f[0]), *f[1:]))  # type: ignore[arg-type]
        return rows

    def bench(self, table: str, partitions: int, rounds: int) -> tuple[float, float]:
        """Median ms of Hive's client locking then unlocking a write set (timed in its JVM)."""
        _, lock, unlock = self.ask(f"BENCH {table} {partitions} {rounds}").split()
        return float(lock), float(unlock)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> MetastoreLockHarness:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
