"""A local ZooKeeper server from the jars of the installed pyspark, for trying things and tests.

The pyspark wheel ships ZooKeeper (``pyspark/jars/zookeeper-*.jar``), so a server needs nothing
but a JDK: ``python -m sparklock zookeeper`` (:mod:`sparklock.managers.zookeeper.local_server_cli`),
``examples/pipelines.py`` and the test suite all start theirs through :class:`ZooKeeperServer`.
It binds 127.0.0.1 only and is a single server with no replication: not for production, where
locks need a real ensemble.

Every server is started and stopped by its own handle (the JVM runs in its own process group, so
a terminal's Ctrl-C reaches the Python owner, which then stops the JVM itself).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def pyspark_jars() -> Path:
    """The ``jars`` folder of the installed pyspark (found without importing pyspark)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyspark is not installed: its jars provide the ZooKeeper server")
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def classpath() -> str:
    return str(pyspark_jars() / "*")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    """Whether something already listens on 127.0.0.1:``port``."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


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


#: The server's maximum heap (MB): ZooKeeper's own default (``ZK_SERVER_HEAP`` in its
#: ``bin/zkEnv.sh``, which ``zkServer.sh`` starts servers with). Less is a server that is not
#: sized as shipped: at 256 MB, wide lock sets keep G1 in concurrent marking (its retained
#: transactions sit near the 45% threshold), which on a shared 2-core machine is CPU taken from
#: the Spark statements waiting on it.
DEFAULT_HEAP_MB = 1000


class ZooKeeperServer:
    """One ZooKeeper server process (standalone, or one member of an ensemble).

    ``data_dir`` None: a temporary directory, removed by :meth:`cleanup`; a given one is kept
    (its snapshots survive a restart, like a real server's)."""

    def __init__(
        self,
        data_dir: Path | str | None = None,
        port: int | None = None,
        *,
        server_id: int | None = None,
        ensemble: list[tuple[int, int, int]] | None = None,
        tick_ms: int = 200,
        max_session_timeout_ms: int = 60000,
        extra_config: list[str] | None = None,
        jvm_options: list[str] | None = None,
        heap_mb: int = DEFAULT_HEAP_MB,
    ) -> None:
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="sparklock-zk-"))
        self.port = port or free_port()
        self.server_id = server_id
        self.ensemble = ensemble
        self.tick_ms = tick_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        #: more ``zoo.cfg`` lines (TLS, auth providers) and JVM options (a JAAS file)
        self.extra_config = list(extra_config or [])
        self.jvm_options = list(jvm_options or [])
        self.heap_mb = heap_mb
        self.proc: subprocess.Popen | None = None
        self.version = ""  # from ``srvr`` once serving

    @property
    def address(self) -> str:
        """The connection string (``spark.sparklock.zookeeper.quorum``)."""
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

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
            *self.extra_config,
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
        main = (
            "org.apache.zookeeper.server.quorum.QuorumPeerMain"
            if self.ensemble
            else "org.apache.zookeeper.server.ZooKeeperServerMain"
        )
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    "java",
                    f"-Xmx{self.heap_mb}m",
                    *self.jvm_options,
                    "-cp",
                    classpath(),
                    main,
                    str(cfg),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        if wait:
            self.wait_serving(timeout)
        return self

    def wait_serving(self, timeout: float = 30.0) -> None:
        """Return once the server answers ``srvr`` (it serves requests), else raise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited; see {self.log_path}")
            try:
                answer = four_letter(self.port, "srvr", 0.5)
            except OSError:
                answer = ""
            if "Zookeeper version" in answer:
                first = answer.splitlines()[0]
                self.version = first.split(":", 1)[1].split("-", 1)[0].strip()
                return
            time.sleep(0.05)
        raise TimeoutError(f"ZooKeeper on {self.address} not serving after {timeout}s")

    def connection_count(self) -> int:
        """Open client connections, from the server's own ``cons`` (minus this probe)."""
        lines = [ln for ln in four_letter(self.port, "cons").splitlines() if ln.strip()]
        return max(0, len(lines) - 1)

    def stop(self, kill: bool = False) -> None:
        """Stop the JVM (SIGTERM, SIGKILL after 10 s) and wait until it is gone."""
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
        """Stop at once and remove the data directory if this server made it."""
        self.stop(kill=True)
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()
