"""Two spark-submit applications on a standalone master + worker, sharing a ZooKeeper.

    python3 -m tests.support.cluster_demo        # prints the transcript

The applications run the installed wheel (``wheel_env``) in client mode: ``holder`` takes an
EXCLUSIVE lock with a long INSERT; ``other`` sees it in SHOW LOCKS EXTENDED, is excluded, and
waits in line; the holder's driver is then killed (SIGKILL to spark-submit and its Python) and
``other`` gets the lock once the dead driver's ZooKeeper session expires.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyspark

from tests.support import wheel_env
from tests.support.standalone import StandaloneCluster
from tests.support.zookeeper import ZooKeeperServer

APP = Path(__file__).with_name("cluster_app.py")


class Transcript:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def say(self, text: str) -> None:
        with self._lock:
            self.lines.append(f"{time.strftime('%H:%M:%S')} demo: {text}")
            print(self.lines[-1], flush=True)

    def follow(self, proc: subprocess.Popen) -> threading.Thread:
        def pump() -> None:
            for line in proc.stdout:  # type: ignore[union-attr]
                with self._lock:
                    self.lines.append(line.rstrip())
                    print(self.lines[-1], flush=True)

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        return thread


def run(workdir: Path) -> list[str]:
    out = Transcript()
    venv = wheel_env.venv(pyspark.__version__, wheel_env.wheel())
    env = wheel_env.user_env(venv, wheel_env.java_runtime(), workdir)
    (workdir / "app.py").write_text(APP.read_text())
    (workdir / "table").mkdir()
    zk = ZooKeeperServer().start()
    cluster = StandaloneCluster(venv, env, workdir, cores=2)
    procs: list[subprocess.Popen] = []
    try:
        cluster.start()
        out.say(f"master {cluster.url} and one worker (2 cores) up; ZooKeeper {zk.address}")

        def submit(role: str) -> subprocess.Popen:
            cmd = [str(venv / "bin" / "spark-submit"), "--master", cluster.url, "app.py", role]
            cmd += [str(workdir / "table"), zk.address, str(workdir)]
            out.say(f"spark-submit --master {cluster.url} app.py {role} ...")
            proc = subprocess.Popen(
                cmd,
                env=env,
                cwd=workdir,
                stdout=subprocess.PIPE,
                stderr=open(workdir / f"{role}.log", "w"),  # noqa: SIM115 - closed with the run
                text=True,
                start_new_session=True,
            )
            procs.append(proc)
            out.follow(proc)
            return proc

        holder = submit("holder")
        other = submit("other")  # it waits to see the holder's INSERT in SHOW LOCKS
        deadline = time.monotonic() + 600
        while not (workdir / "ready").exists():
            if time.monotonic() > deadline or other.poll() is not None:
                raise AssertionError((workdir / "other.log").read_text()[-4000:])
            time.sleep(0.5)
        time.sleep(3)
        out.say(f"kill -9 the holder's driver (spark-submit pid {holder.pid} and its Python)")
        os.killpg(holder.pid, signal.SIGKILL)
        code = other.wait(600)
        time.sleep(1)
        out.say(f"other exited with {code}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        cluster.stop()
        zk.cleanup()
    return out.lines


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="sparklock-cluster-") as tmp:
        lines = run(Path(tmp))
    sys.exit(0 if any("done after" in x for x in lines) else 1)
