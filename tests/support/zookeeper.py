"""Real ZooKeeper servers and ensembles on loopback, started from the jars in the pyspark wheel.

The single server is the package's own (:mod:`sparklock.managers.zookeeper.local_server`, also
behind ``python -m sparklock zookeeper``); the ensemble, for failover tests, lives here. Every
server is started and stopped by its own handle; nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from sparklock.managers.zookeeper.local_server import (
    ZooKeeperServer,
    classpath,
    four_letter,
    free_port,
    pyspark_jars,
)

PYSPARK_JARS = pyspark_jars()
CLASSPATH = classpath()

__all__ = [
    "CLASSPATH",
    "PYSPARK_JARS",
    "ZooKeeperEnsemble",
    "ZooKeeperServer",
    "four_letter",
    "free_port",
]


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
