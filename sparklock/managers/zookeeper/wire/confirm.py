"""Renewing the lease in an ensemble only from what the *leader* has confirmed.

In an ensemble the leader alone expires sessions. A follower answers its clients' pings itself
and reports the sessions it heard (its "touch table") in its replies to the leader's pings, which
the leader sends each follower every ``tickTime / 2`` (``Leader.lead``, ``Learner.ping``,
``LearnerHandler``: ``case Leader.PING`` touches each reported session). A follower cut from its
leader goes on answering pings until its own read of the leader times out, ``syncLimit x
tickTime`` later: an answered ping proves nothing about the leader's clock of the session.

A ``sync`` is forwarded by the follower to the leader and answered by the leader on the same
ordered connection as its pings; the leader does not touch the session for it (requests from
learners go straight to ``PrepRequestProcessor``), it only checks that the session is alive. So
one answered sync proves the leader was reachable, not that it heard the session. Three in a row
do, on one connection to one server (each sent after the previous was answered):

* ``S_j`` sent at ``t_j``: the follower touched the session on receipt (at or after ``t_j``),
  before forwarding it, so the leader answered it (``l_j``) after that touch;
* ``S_m`` sent at least ``gap`` after ``S_j``'s answer arrived: the leader handled it at
  ``l_m > l_j + gap``, and queued a ping to the follower in between (``gap >= tickTime / 2``);
  the follower handles the leader's packets in order on one thread, so it replied to that ping
  (reporting the touch, or an earlier reply did) before it handled ``S_m``'s answer;
* ``S_k`` sent after ``S_m``'s answer arrived: the follower forwarded it after that ping reply,
  on the same connection, and the leader reads a follower's packets in order; its answer means
  the leader has read the reply, touching the session, at or after ``t_j``.

So on ``S_k``'s answer the session lives on the leader until ``t_j + sessionTimeout`` at least.
``gap`` is a quarter of the session timeout: ZooKeeper negotiates no timeout below its
``minSessionTimeout``, by default two ticks, so ``tickTime / 2 <= sessionTimeout / 4``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Protocol

from kazoo.client import KazooClient
from kazoo.protocol.serialization import GetData
from kazoo.protocol.states import KazooState

log = logging.getLogger("sparklock.zookeeper")

#: kazoo's request type of ``sync`` (``kazoo.protocol.serialization.Sync.type``).
SYNC_TYPE = 9
#: Where every server publishes its membership: empty on a standalone server.
CONFIG_NODE = "/zookeeper/config"
#: Syncs remembered per connection (the chain needs the last few only).
KEPT = 16


class ServerMode(Protocol):
    """What the confirmer needs of the lease clock (:class:`.lease.LeaseClock`)."""

    connection: int
    standalone: bool | None

    def learned(self, connection: int, standalone: bool | None) -> None: ...


class SyncChain:
    """Answered syncs of one connection; :meth:`answered` says what the leader has confirmed."""

    def __init__(self) -> None:
        self._done: deque[tuple[int, int]] = deque(maxlen=KEPT)  # (sent, answered) ns

    def reset(self) -> None:
        """A new connection (perhaps to another server): earlier answers prove nothing here."""
        self._done.clear()

    def answered(self, sent_ns: int, answered_ns: int, gap_ns: int) -> int | None:
        """The sync sent at ``sent_ns`` was answered: the latest send time ``t_j`` the leader
        has confirmed hearing the session at or after (see the module), or None."""
        best: int | None = None
        for t_m, a_m in self._done:
            if a_m > sent_ns:
                continue  # S_k must be sent after S_m's answer arrived
            for t_j, a_j in self._done:
                if a_j + gap_ns <= t_m and (best is None or t_j > best):
                    best = t_j
        self._done.append((sent_ns, answered_ns))
        return best


def is_standalone(client: KazooClient, timeout: float) -> bool | None:
    """Whether the server ``client`` is connected to runs alone (it then expires sessions
    itself, and its answers renew the lease directly); None if it could not be asked.

    Read past the client's chroot (``/zookeeper/config`` is the servers' own node)."""
    result = client.handler.async_result()
    try:
        client._call(GetData(CONFIG_NODE, None), result)
        data, _ = result.get(timeout=timeout)
    except Exception:  # noqa: BLE001 - unknown: treated as an ensemble, the safe side
        log.debug("sparklock: reading %s failed", CONFIG_NODE, exc_info=True)
        return None
    return not (data or b"").strip()


class LeaderConfirmer:
    """The thread that sends one ``sync`` per ``interval`` on a client connected to an ensemble
    member, one at a time, so that :class:`SyncChain` can renew the lease (a standalone server
    gets none: its own answers renew the lease)."""

    def __init__(
        self, client: KazooClient, clock: ServerMode, interval: float, wait: float
    ) -> None:
        self.client = client
        self._clock = clock
        self._interval = interval
        self._wait = wait  # longest wait for one answer (a sync stuck at a cut follower)
        self._thread = threading.Thread(
            target=self._run, name="sparklock-zk-lease-confirm", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        client, clock = self.client, self._clock
        # kazoo sets ``_stopped`` when the client is stopped: the thread ends with it
        while not client._stopped.wait(self._interval):
            if client.state != KazooState.CONNECTED:
                continue
            connection = clock.connection
            if clock.standalone is None:
                clock.learned(connection, is_standalone(client, self._wait))
            if clock.standalone:
                continue
            try:
                client.sync_async("/").wait(self._wait)
            except Exception:  # noqa: BLE001 - a lost connection: the next one starts anew
                log.debug("sparklock: lease sync failed", exc_info=True)


__all__ = ["SYNC_TYPE", "LeaderConfirmer", "SyncChain", "is_standalone"]
