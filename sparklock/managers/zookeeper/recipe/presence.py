"""Owners that can be checked for life: one ephemeral presence node per agent.

Explicit locks are persistent (Hive's rule): when the driver that took them is gone for good
they stay until someone UNLOCKs them. To tell such locks from a living driver's, every agent
that takes locks (the Spark application id, or the server session of a Thrift/Connect session:
the lock data's ``g=``) keeps an ephemeral node ``/<namespace>/_sparklock-owners/<agent>``
holding its host, pid, agent and start time. It lives exactly as long as the ZooKeeper session
of the process that took the locks: gone with a SIGKILL'd driver once its session expires.

A lock is then *alive* when its agent's node exists, *dead* when it does not, and *unknown*
when its data names no agent or no owner (``s=``): Hive's locks, and locks written before
presence was registered, whose agents never published one. A server session's node stays while
its server process lives (its explicit locks are alive as long as the server is).

Registered on an agent's first acquisition in a ZooKeeper session (one create; later
acquisitions cost a set lookup) and again after a session loss, in the background. A process
that exits normally deletes its nodes on the way out (its session could outlive it by a session
timeout), after ``explicit.onApplicationEnd`` had its say.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Sequence
from urllib.parse import quote

from kazoo.exceptions import KazooException, NodeExistsError
from kazoo.handlers.threading import KazooTimeoutError

from ....errors import SparkLockError
from ....locks.model import LockInfo
from ..layout import OWNERS_CONTAINER
from ..wire.ops import data_of, node_data
from ..wire.transport import Transport

log = logging.getLogger("sparklock.zookeeper")

#: Registration is best effort: it never holds an acquisition up longer than this.
PRESENCE_TIMEOUT = 2.0


#: Every Presence that registered an agent: their nodes go when the process exits normally.
_LIVING: weakref.WeakSet[Presence] = weakref.WeakSet()


def _leave_all() -> None:
    for presence in list(_LIVING):
        presence.leave()


atexit.register(_leave_all)


def presence_name(agent: str) -> str:
    """The node name of an agent (any character but ``/`` and ``%`` kept as it is)."""
    return quote(agent, safe="")


class Presence:
    """Registers this process's agents and answers whether a lock's agent is alive."""

    def __init__(self, transport: Transport, root: str) -> None:
        self.transport = transport
        self.container = f"{root.rstrip('/')}/{OWNERS_CONTAINER}"
        self._lock = threading.Lock()
        self._agents: dict[str, int] = {}  # agent -> the session generation it is registered in
        self.started_ms = int(time.time() * 1000)

    def path_of(self, agent: str) -> str:
        return f"{self.container}/{presence_name(agent)}"

    def register(self, agent: str) -> None:
        """Make sure ``agent``'s node exists in the current session (idempotent, cheap)."""
        generation = self.transport.shared.generation
        if not agent or self._agents.get(agent) == generation:
            return
        payload = json.dumps(
            {
                "agent": agent,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "started": self.started_ms,
            },
            sort_keys=True,
        ).encode("utf-8")
        try:
            self.transport.retrying(
                lambda: self._create(agent, payload), "registering an owner", PRESENCE_TIMEOUT
            )
        except (SparkLockError, KazooException, KazooTimeoutError) as exc:
            log.warning("sparklock: could not register owner %s as alive (%r)", agent, exc)
            return
        with self._lock:
            self._agents[agent] = generation
        _LIVING.add(self)

    def leave(self) -> None:
        """Delete this process's agents' nodes now (the process is ending). Best effort."""
        with self._lock:
            agents, self._agents = list(self._agents), {}
        for agent in agents:
            try:
                self.transport.retrying(
                    lambda a=agent: self.transport.client().delete(self.path_of(a)),
                    "unregistering an owner",
                    PRESENCE_TIMEOUT,
                )
            except (SparkLockError, KazooException, KazooTimeoutError) as exc:
                log.debug("sparklock: presence of %s left to its session (%r)", agent, exc)

    def _create(self, agent: str, payload: bytes) -> None:
        try:
            self.transport.client().create(
                self.path_of(agent), payload, ephemeral=True, makepath=True
            )
        except NodeExistsError:
            pass  # another manager of this process (same session), or a retried create

    def on_session_lost(self, _generation: int, _reason: str) -> None:
        """The ephemeral nodes went with the session: register every agent again, in the
        background (the new session may take a while)."""
        with self._lock:
            agents = list(self._agents)
        if agents:
            threading.Thread(
                target=self._reregister, args=(agents,), name="sparklock-presence", daemon=True
            ).start()

    def _reregister(self, agents: list[str]) -> None:
        for agent in agents:
            self.register(agent)

    def alive(self, infos: Sequence[LockInfo]) -> list[bool | None]:
        """Per lock: its agent's node exists (True), does not (False), or unknown (None: no
        agent or no owner in its data: Hive's locks and older data)."""
        checked = sorted({i.data.agent for i in infos if i.data.agent and i.data.owner})
        found = self.transport.read([data_of(self.path_of(a)) for a in checked], "checking owners")
        exists = {a: node_data(r) is not None for a, r in zip(checked, found, strict=True)}
        return [exists.get(i.data.agent) if i.data.owner else None for i in infos]
