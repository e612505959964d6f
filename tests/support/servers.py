"""Real sparklock servers and real clients for tests: ``python -m sparklock thriftserver`` /
``connect-server`` as subprocesses, and beeline from the pyspark jars."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.zookeeper import CLASSPATH, free_port

REPO = Path(__file__).resolve().parents[2]
BEELINE = "org.apache.hive.beeline.BeeLine"
PROMPT = re.compile(r"^\d+: jdbc:\S+> ")


class ServerProcess:
    """One ``python -m sparklock <kind>`` process; ``url`` once it printed its ready line."""

    def __init__(
        self,
        kind: str,
        conf: dict[str, str],
        workdir: Path,
        *extra: str,
        env: dict[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.port = free_port()
        self.workdir = workdir
        args = [sys.executable, "-m", "sparklock", kind, "--port", str(self.port), *extra]
        for k, v in conf.items():
            args += ["--conf", f"{k}={v}"]
        env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
        self.log = open(workdir / f"{kind}-{self.port}.log", "w")  # noqa: SIM115 - kept open
        self.proc = subprocess.Popen(
            args,
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            start_new_session=True,  # a signal to it reaches only the Python process
        )
        self.url = ""
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def wait_ready(self, timeout: float = 240.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=1.0)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            if " ready: " in line:
                self.url = line.split(" ready: ", 1)[1].strip()
                return self.url
        raise AssertionError(f"{self.kind} did not start:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        self.log.flush()
        text = (self.workdir / f"{self.kind}-{self.port}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def terminate(self, timeout: float = 90.0) -> int:
        """SIGTERM to the Python process only; returns its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(30)
        finally:
            self.log.close()


def beeline_args(port: int, user: str, sql: str, *extra: str) -> list[str]:
    return [
        "java",
        "-cp",
        CLASSPATH,
        BEELINE,
        "-u",
        f"jdbc:hive2://127.0.0.1:{port}/default",
        "-n",
        user,
        "--silent=true",
        "--outputformat=tsv2",
        "--showHeader=false",
        *extra,
        "-e",
        sql,
    ]


def beeline(port: int, user: str, sql: str, timeout: float = 180.0) -> subprocess.CompletedProcess:
    """Runs ``sql`` (``;``-separated statements) in one JDBC session of ``user``."""
    return subprocess.run(
        beeline_args(port, user, sql),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def beeline_background(port: int, user: str, sql: str) -> subprocess.Popen:
    """A beeline session left running (to be cancelled with SIGINT or killed with SIGKILL)."""
    return subprocess.Popen(
        beeline_args(port, user, sql),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def rows(result: subprocess.CompletedProcess) -> list[list[str]]:
    """The tab-separated result rows beeline printed (log lines dropped)."""
    out = []
    for line in result.stdout.splitlines():
        line = PROMPT.sub("", line)  # beeline may echo its prompt before a row
        if "\t" in line or (line and not line.startswith(("SLF4J", "WARN"))):
            out.append(line.split("\t"))
    return out


def wait_until(predicate, timeout: float, interval: float = 0.1) -> float:
    """Seconds until ``predicate()`` held; AssertionError after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return time.monotonic() - start
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")
