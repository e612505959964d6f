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
from tests.support.tcp_proxy import TcpProxy

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
    """A 3-node (or n-node) ensemble on loopback ports, for failover tests.

    ``isolated``: the id of one member whose quorum and election traffic to every other member
    goes through loopback proxies (:class:`TcpProxy`), so that :meth:`cut_isolated` can silence
    it: a follower partitioned from its leader while its clients still reach it. It must be the
    highest id (ZooKeeper keeps the election connection the higher id opens, so all of its
    traffic then passes the proxies) and starts last, once the others have elected one of them:
    it joins as a follower. ``extra_config``: more ``zoo.cfg`` lines for every member (a later
    line wins: ``syncLimit=50`` widens how long a cut follower keeps serving)."""

    def __init__(
        self,
        size: int = 3,
        *,
        isolated: int | None = None,
        extra_config: list[str] | None = None,
    ) -> None:
        if isolated is not None and isolated != size:
            raise ValueError("the isolated member must have the highest id")
        self.root = Path(tempfile.mkdtemp(prefix="sparklock-zk-ens-"))
        peers = [(i + 1, free_port(), free_port()) for i in range(size)]
        self.proxies: list[TcpProxy] = []
        self.isolated = isolated
        self.servers = [
            ZooKeeperServer(
                self.root / f"s{sid}",
                server_id=sid,
                ensemble=self._view(sid, peers),
                extra_config=extra_config,
            )
            for sid, _, _ in peers
        ]

    def _view(self, sid: int, peers: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """The ``server.N`` entries member ``sid`` is given: proxies in place of the others'
        ports for the isolated member, the real ports for everyone else."""
        if sid != self.isolated:
            return peers
        view = []
        for other, quorum, election in peers:
            if other == sid:
                view.append((other, quorum, election))
                continue
            links = (TcpProxy("127.0.0.1", quorum), TcpProxy("127.0.0.1", election))
            self.proxies += links
            view.append((other, links[0].port, links[1].port))
        return view

    @property
    def address(self) -> str:
        return ",".join(s.address for s in self.servers)

    def member(self, sid: int) -> ZooKeeperServer:
        return self.servers[sid - 1]

    def others_address(self, sid: int) -> str:
        """The connection string of every member but ``sid``."""
        return ",".join(s.address for s in self.servers if s.server_id != sid)

    def cut_isolated(self) -> None:
        """Silence every link of the isolated member to the others (connections stay open,
        bytes are dropped both ways: each side learns only from its own read timeout)."""
        for proxy in self.proxies:
            proxy.silence()

    def heal_isolated(self) -> None:
        for proxy in self.proxies:
            proxy.heal()

    def start(self, timeout: float = 60.0) -> ZooKeeperEnsemble:
        first = [s for s in self.servers if s.server_id != self.isolated]
        for s in first:
            s.start(wait=False)
        for s in first:
            s.wait_serving(timeout)
        for s in self.servers:
            if s not in first:
                s.start(wait=True, timeout=timeout)
        return self

    def cleanup(self) -> None:
        for s in self.servers:
            s.stop(kill=True)
        for proxy in self.proxies:
            proxy.cut()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ZooKeeperEnsemble:
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc) -> None:
        self.cleanup()
