"""Drive Hive 2.3.10's real ZooKeeperHiveLockManager from tests.

``tests/hive_interop/HiveLockHarness.java`` is compiled once with ``javac`` against the pyspark jars
into a cache directory keyed by the source's hash (and the jars' Hive version), then run as one JVM
that holds locks between commands. :class:`HiveLockHarness` speaks its line protocol; its JVM is
always killed on ``close()`` / leaving the ``with`` block.
"""

from __future__ import annotations

import hashlib
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.zookeeper import CLASSPATH, PYSPARK_JARS

SOURCE = Path(__file__).resolve().parents[1] / "hive_interop" / "HiveLockHarness.java"
MAIN_CLASS = "HiveLockHarness"


def _hive_exec_jar() -> str:
    """pyspark's Hive 2.3 jar: hive-exec-2.3.10-core.jar (Spark 4.x), 2.3.9 (Spark 3.5)."""
    found = sorted(PYSPARK_JARS.glob("hive-exec-2.3.*-core.jar"))
    return found[-1].name if found else "hive-exec-2.3.*-core.jar"


HIVE_EXEC_JAR = _hive_exec_jar()
# Hive 2.3 reflects into java.net on JDK 17 (see /work/shared/notes/hive-locking.md).
JVM_OPTIONS = [
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",  # starts faster; the harness does little work
]
NULL_FIELD = "\\N"


class HiveHarnessError(RuntimeError):
    """The harness answered ERROR, died, or did not answer in time."""


def missing_requirements() -> str | None:
    """Why the harness cannot run here (for ``pytest.skip``), or None."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"{tool} not on PATH"
    if not (PYSPARK_JARS / HIVE_EXEC_JAR).exists():
        return f"{HIVE_EXEC_JAR} not in {PYSPARK_JARS}"
    return None


def cache_root() -> Path:
    base = os.environ.get("SPARKLOCK_HIVE_HARNESS_CACHE")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg or Path.home() / ".cache") / "sparklock" / "hive-harness"


def build_harness(
    root: Path | None = None,
    *,
    source: Path = SOURCE,
    main_class: str = MAIN_CLASS,
    classpath: str = CLASSPATH,
) -> Path:
    """Compile the harness (or another single-file Java program against the pyspark jars, such
    as the benchmarks' ``HiveLockBench.java``, or against ``classpath``) unless a build of this
    exact source exists; return its class dir."""
    digest = hashlib.sha256(source.read_bytes())
    digest.update(HIVE_EXEC_JAR.encode())
    root = root or cache_root()
    target = root / digest.hexdigest()[:20]
    if (target / f"{main_class}.class").exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=root))
    try:
        proc = subprocess.run(
            ["javac", "-nowarn", "-d", str(tmp), "-cp", classpath, str(source)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise HiveHarnessError(f"javac failed:\n{proc.stdout}{proc.stderr}")
        try:
            tmp.rename(target)  # atomic: a concurrent build of the same source may win
        except OSError:
            if not (target / f"{main_class}.class").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


@dataclass(frozen=True)
class Answer:
    """The answer to LOCK / LOCKSET.

    Granted: ``group`` names the locks for :meth:`HiveLockHarness.release`, ``detail`` is the znode
    path (LOCK) or the number of locks (LOCKSET). Refused: ``detail`` is Hive's reason.
    """

    granted: bool
    detail: str
    group: int | None = None

    @property
    def refused(self) -> bool:
        return not self.granted


@dataclass(frozen=True)
class HiveLockRow:
    """One lock as Hive's ``getLocks(verifyTablePartitions=false, fetchData=true)`` reports it."""

    name: str
    mode: str
    query_id: str | None
    lock_mode: str | None  # IMPLICIT / EXPLICIT
    query_string: str | None
    client_ip: str | None
    lock_time: str | None
    path: str

    @classmethod
    def parse(cls, line: str) -> HiveLockRow:
        fields = [None if f == NULL_FIELD else f for f in line.split("\t")]
        if len(fields) != 8:
            raise HiveHarnessError(f"bad SHOW line: {line!r}")
        return cls(*fields)  # type: ignore[arg-type]


def _mode(mode: object) -> str:
    return str(getattr(mode, "value", mode)).upper()


class HiveLockHarness:
    """One JVM running Hive's ZooKeeperHiveLockManager against ``address`` (host:port)."""

    def __init__(
        self,
        address: str,
        namespace: str,
        *,
        timeout: float = 60.0,
        build_dir: Path | None = None,
        jvm_options: Iterable[str] = (),
    ) -> None:
        self.address = address
        self.jvm_options = list(jvm_options)  # e.g. a JAAS file: Hive's ZooKeeper credentials
        self.namespace = namespace
        self.timeout = timeout
        self.build_dir = build_dir
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> HiveLockHarness:
        classes = self.build_dir or build_harness()
        fd, log = tempfile.mkstemp(prefix="sparklock-hive-harness-", suffix=".log")
        self.log_path = Path(log)
        with os.fdopen(fd, "wb") as err:
            self.proc = subprocess.Popen(
                [
                    "java",
                    *JVM_OPTIONS,
                    *self.jvm_options,
                    "-cp",
                    f"{classes}{os.pathsep}{CLASSPATH}",
                    MAIN_CLASS,
                    self.address,
                    self.namespace,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                encoding="utf-8",
                bufsize=1,
                start_new_session=True,
            )
        threading.Thread(target=self._pump, args=(self.proc,), daemon=True).start()
        try:
            first = self._next_line()
            if first != "READY":
                raise HiveHarnessError(f"harness did not start: {first!r}{self._log_tail()}")
        except BaseException:
            self.close()
            raise
        return self

    def _pump(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def close(self) -> None:
        """Quit (implicit locks vanish with the ZooKeeper session); kill the JVM if it lingers."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None and proc.stdin is not None:
                try:
                    proc.stdin.write("QUIT\n")
                    proc.stdin.flush()
                    proc.stdin.close()
                except (BrokenPipeError, OSError):
                    pass
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(10)
            if self.log_path is not None:
                self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> HiveLockHarness:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- protocol -------------------------------------------------------------------------------
    def _log_tail(self, lines: int = 30) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text("utf-8", "replace").splitlines()[-lines:]
        return "\n--- harness stderr (tail) ---\n" + "\n".join(text)

    def _next_line(self) -> str:
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            raise HiveHarnessError(
                f"no answer from the harness in {self.timeout}s{self._log_tail()}"
            ) from None
        if line is None:
            raise HiveHarnessError(f"the harness exited{self._log_tail()}")
        return line

    def request(self, command: str) -> str:
        """Send one command; return its one-line answer (ERROR answers raise)."""
        return self._request(command, block=False)[0]

    def _request(self, command: str, block: bool) -> list[str]:
        if "\n" in command:
            raise ValueError("one command per line")
        with self._lock:
            if self.proc is None or self.proc.stdin is None:
                raise HiveHarnessError("harness is not running")
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
            lines = [self._next_line()]
            if block and not lines[0].startswith("ERROR"):
                while lines[-1] != "END":
                    lines.append(self._next_line())
        if lines[0].startswith("ERROR"):
            raise HiveHarnessError(f"{command!r}: {lines[0]}{self._log_tail(10)}")
        return lines

    @staticmethod
    def _answer(line: str) -> Answer:
        word, _, detail = line.partition(" ")
        if word == "OK":
            group, _, detail = detail.partition(" ")
            return Answer(True, detail, int(group))
        if word == "REFUSED":
            return Answer(False, detail)
        raise HiveHarnessError(f"unexpected answer {line!r}")

    # -- commands -------------------------------------------------------------------------------
    def ping(self) -> None:
        assert self.request("PING") == "OK"

    def use_namespace(self, namespace: str) -> None:
        """A fresh Hive manager on ``hive.zookeeper.namespace=namespace`` (same ZK client)."""
        assert self.request(f"NAMESPACE {namespace}") == "OK"
        self.namespace = namespace

    def query(self, query_id: str, query_string: str = "") -> None:
        """Lock data (query id and query string) of the locks taken from now on."""
        if not query_id or any(c.isspace() for c in query_id):
            raise ValueError(f"query id must be one word: {query_id!r}")
        assert self.request(f"QUERY {query_id} {query_string}".rstrip()) == "OK"

    def lock(self, name: str, mode: object, lock_type: str = "IMPLICIT") -> Answer:
        """Hive's single-object lock (creates every parent node); ``detail`` is the znode path."""
        return self._answer(self.request(f"LOCK {name} {_mode(mode)} {lock_type.upper()}"))

    def lockset(
        self,
        items: Mapping[str, object] | Iterable[tuple[str, object]],
        lock_type: str = "IMPLICIT",
    ) -> Answer:
        """Hive's list API as a statement uses it: sorted, deduplicated, all-or-nothing."""
        pairs = items.items() if isinstance(items, Mapping) else items
        spec = ",".join(f"{name}:{_mode(mode)}" for name, mode in pairs)
        return self._answer(self.request(f"LOCKSET {spec} {lock_type.upper()}"))

    def release(self, group: int | Answer) -> int:
        """Release one LOCK / LOCKSET (a statement's end); the number of locks released."""
        if isinstance(group, Answer):
            group = group.group
        return int(self.request(f"RELEASE {group}").split()[1])

    def unlock(self, name: str) -> int:
        """Release the locks this harness holds on ``name``; the number released."""
        return int(self.request(f"UNLOCK {name}").split()[1])

    def unlock_all(self) -> int:
        return int(self.request("UNLOCKALL").split()[1])

    def unlock_any(self, name: str) -> int | None:
        """Hive's UNLOCK TABLE: remove every lock on exactly ``name``; None when not locked."""
        answer = self.request(f"UNLOCKANY {name}")
        return None if answer == "NOTLOCKED" else int(answer.split()[1])

    def show(self, name: str | None = None) -> list[HiveLockRow]:
        """Hive's getLocks (all, or on exactly ``name``) with data, in Hive's (tree) order."""
        lines = self._request(f"SHOW {name}" if name else "SHOW", block=True)
        return [HiveLockRow.parse(line) for line in lines[:-1]]
