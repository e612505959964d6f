"""Spark's standalone cluster manager on loopback: a master and one worker, separate JVMs started
from an installed pyspark's own launcher (``spark-class``; pyspark ships no start-master.sh).
Python applications run on it in client mode (the driver is the spark-submit process)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.support.zookeeper import free_port


class StandaloneCluster:
    def __init__(self, venv: Path, env: dict[str, str], workdir: Path, cores: int = 1) -> None:
        self.venv, self.env, self.workdir, self.cores = venv, env, workdir, cores
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []

    def _start(self, name: str, *args: str) -> Path:
        log = self.workdir / f"{name}.log"
        with open(log, "w") as out:
            self.procs.append(
                subprocess.Popen(
                    [str(self.venv / "bin" / "spark-class"), *args],
                    env=self.env,
                    cwd=self.workdir,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its JVM and launcher stop together
                )
            )
        return log

    def start(self, timeout: float = 240.0) -> StandaloneCluster:
        master = "org.apache.spark.deploy.master.Master"
        ports = ["--port", str(self.port), "--webui-port", str(free_port())]
        self._start("master", master, "--host", "127.0.0.1", *ports)
        self._wait(self.workdir / "master.log", "I have been elected leader", timeout)
        worker = "org.apache.spark.deploy.worker.Worker"
        work = self.workdir / "worker-dir"
        log = self._start(
            "worker",
            worker,
            self.url,
            "--host",
            "127.0.0.1",
            "--cores",
            str(self.cores),
            "--memory",
            "1g",
            "--webui-port",
            str(free_port()),
            "--work-dir",
            str(work),
        )
        self._wait(log, "Successfully registered with master", timeout)
        return self

    def _wait(self, log: Path, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in log.read_text(errors="replace"):
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        raise AssertionError(f"{log.name}: no {text!r}:\n{log.read_text(errors='replace')[-3000:]}")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
