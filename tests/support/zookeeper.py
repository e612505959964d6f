"""Real ZooKeeper servers and ensembles on loopback, started from the jars in the pyspark wheel.

Every server is started and stopped by its own handle; nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pyspark

PYSPARK_JARS = Path(pyspark.__file__).parent / "jars"
CLASSPATH = str(PYSPARK_JARS / "*")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def four_letter(port: int, word: str, timeout: float = 2.0) -> str:
    """Send a four-letter word (mntr, cons, srvr, ruok) and return the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


class ZooKeeperServer:
    """One ZooKeeper server process (standalone, or one member of an ensemble)."""

    def __init__(
        self,
        data_dir: Path | None = None,
        port: int | None = None,
        *,
        server_id: int | None = None,
        ensemble: list[tuple[int, int, int]] | None = None,
        tick_ms: int = 200,
        max_session_timeout_ms: int = 60000,
    ) -> None:
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="sparklock-zk-"))
        self.port = port or free_port()
        self.server_id = server_id
        self.ensemble = ensemble
        self.tick_ms = tick_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        lines = [
            f"tickTime={self.tick_ms}",
            f"dataDir={self.data_dir / 'data'}",
            f"clientPort={self.port}",
            "clientPortAddress=127.0.0.1",
            "admin.enableServer=false",
            "4lw.commands.whitelist=mntr,cons,srvr,ruok,stat",
            "maxClientCnxns=0",
            "minSessionTimeout=400",
            f"maxSessionTimeout={self.max_session_timeout_ms}",
            "initLimit=10",
            "syncLimit=5",
        ]
        if self.ensemble:
            for sid, peer, election in self.ensemble:
                lines.append(f"server.{sid}=127.0.0.1:{peer}:{election}")
            (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
            (self.data_dir / "data" / "myid").write_text(str(self.server_id))
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text("\n".join(lines) + "\n")
        return cfg

    def start(self, wait: bool = True, timeout: float = 30.0) -> ZooKeeperServer:
        cfg = self._write_config()
        log = open(self.data_dir / "server.log", "ab")
        main = (
            "org.apache.zookeeper.server.quorum.QuorumPeerMain"
            if self.ensemble
            else "org.apache.zookeeper.server.ZooKeeperServerMain"
        )
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", CLASSPATH, main, str(cfg)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        if wait:
            self.wait_serving(timeout)
        return self

    def wait_serving(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited; see {self.data_dir / 'server.log'}")
            try:
                if "Zookeeper version" in four_letter(self.port, "srvr", 0.5):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"ZooKeeper on {self.address} not serving after {timeout}s")

    def connection_count(self) -> int:
        """Open client connections, from the server's own ``cons`` (minus this probe)."""
        lines = [ln for ln in four_letter(self.port, "cons").splitlines() if ln.strip()]
        return max(0, len(lines) - 1)

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None

    def cleanup(self) -> None:
        self.stop(kill=True)
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()


class ZooKeeperEnsemble:
    """A 3-node (or n-node) ensemble on loopback ports, for failover tests."""

    def __init__(self, size: int = 3) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sparklock-zk-ens-"))
        peers = [(i + 1, free_port(), free_port()) for i in range(size)]
        self.servers = [
            ZooKeeperServer(self.root / f"s{sid}", server_id=sid, ensemble=peers)
            for sid, _, _ in peers
        ]

    @property
    def address(self) -> str:
        return ",".join(s.address for s in self.servers)

    def start(self, timeout: float = 60.0) -> ZooKeeperEnsemble:
        for s in self.servers:
            s.start(wait=False)
        for s in self.servers:
            s.wait_serving(timeout)
        return self

    def cleanup(self) -> None:
        for s in self.servers:
            s.stop(kill=True)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ZooKeeperEnsemble:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()
