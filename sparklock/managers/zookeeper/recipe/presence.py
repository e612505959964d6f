"""Owners that can be checked for life: one ephemeral presence node per agent.

Explicit locks are persistent (Hive's rule): when the driver that took them is gone for good
they stay until someone UNLOCKs them. To tell such locks from a living driver's, every agent
that takes locks (the Spark application id, or the server session of a Thrift/Connect session:
the lock data's ``g=``) keeps an ephemeral node ``/<namespace>/_sparklock-owners/<agent>``
holding its host, pid, agent and start time. It lives exactly as long as the ZooKeeper session
of the process that took the locks: gone with a SIGKILL'd driver once its session expires.

The rule never calls a living owner dead, since ``stale --apply`` removes a dead owner's locks:

* *alive*: its agent's node exists;
* *dead*: its agent's node does not exist, and the lock's data says (``p=1``) that the node
  existed when the lock was taken: the node was there and is gone, so its ZooKeeper session
  ended (expired, or the process left);
* *unknown*: every other lock: no ``p=1`` (the registration had failed when the lock was
  taken -- ZooKeeper unreachable, an ACL forbidding the node --, or it was taken by an earlier
  version), or no agent or owner (``s=``) at all (Hive's locks).

A server session's node stays while its server process lives (its explicit locks are alive as
long as the server is).

Registered on an agent's first acquisition in a ZooKeeper session (one create; later
acquisitions cost a set lookup) and again after a session loss, in the background. A failed
registration is tried again at the next acquisition, but not more often than every
:data:`RETRY_AFTER` seconds, and warned about once per outage (a WARN when it starts failing, an
INFO when it works again), not at every statement. A process that exits normally deletes its
nodes on the way out (its session could outlive it by a session timeout), after
``explicit.onApplicationEnd`` had its say.
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
#: After a failed registration, acquisitions skip it for this long (their locks say unknown).
RETRY_AFTER = 10.0


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
        self._failing_since: float | None = None  # monotonic: registrations fail since then
        self._next_try = 0.0

    def path_of(self, agent: str) -> str:
        return f"{self.container}/{presence_name(agent)}"

    def register(self, agent: str) -> bool:
        """Make sure ``agent``'s node exists in the current session (idempotent, cheap). True
        when it does; False when it could not be registered (the lock then says unknown)."""
        generation = self.transport.shared.generation
        if not agent:
            return False
        if self._agents.get(agent) == generation:
            return True
        if time.monotonic() < self._next_try:
            return False  # failed a moment ago: not again at every statement
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
            self._failed(agent, exc)
            return False
        with self._lock:
            self._agents[agent] = generation
            recovered, self._failing_since = self._failing_since, None
        if recovered is not None:
            log.info(
                "sparklock: owner %s registered as alive again after %.0f s",
                agent,
                time.monotonic() - recovered,
            )
        _LIVING.add(self)
        return True

    def _failed(self, agent: str, exc: BaseException) -> None:
        """One WARN per outage; later failures of the same outage are DEBUG."""
        with self._lock:
            first = self._failing_since is None
            if first:
                self._failing_since = time.monotonic()
            self._next_try = time.monotonic() + RETRY_AFTER
        if first:
            log.warning(
                "sparklock: could not register owner %s as alive (%r); its locks are listed "
                "with an unknown owner (never stale) until it can; retried at most every %.0f s",
                agent,
                exc,
                RETRY_AFTER,
            )
        else:
            log.debug("sparklock: owner %s still not registered (%r)", agent, exc)

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
        """Per lock: its agent's node exists (True); it does not although the lock says it did
        (False: gone); else unknown (None: see the module doc)."""
        checked = sorted({i.data.agent for i in infos if i.data.agent and i.data.owner})
        found = self.transport.read([data_of(self.path_of(a)) for a in checked], "checking owners")
        exists = {a: node_data(r) is not None for a, r in zip(checked, found, strict=True)}
        out: list[bool | None] = []
        for i in infos:
            there = exists.get(i.data.agent) if i.data.owner else None
            out.append(True if there else (False if there is False and i.data.presence else None))
        return out
