"""The lease of a ZooKeeper session's locks, renewed by what kazoo hears from the servers.

ZooKeeper expires a session ``sessionTimeout`` after a server last heard from its client. So
when an answer arrives to a request (a ping or any operation) sent at ``t_sent``, the server heard
the client at some instant after ``t_sent``, and the session's ephemeral locks are certainly held
until::

    deadline = t_sent + sessionTimeout - margin

(the margin covers the reaction of the JVM's watchdog and a commit already past its check).
On a standalone server kazoo's pings (every third of the session timeout when idle) renew it;
no request is added. In an ensemble the leader expires sessions, and a follower cut from it
answers pings for ``syncLimit x tickTime`` more: there only a chain of answered ``sync``
requests renews it, and the connect itself (the leader creates or revalidates the session),
see :mod:`.confirm`. Which of the two is asked once per connection (``/zookeeper/config``).

kazoo has no public hook for send and answer times, so this wraps three methods of the
client's connection handler, the thread that does all of its socket work: ``_connect`` (the
session id and the negotiated timeout), ``_submit`` (the send time per xid) and
``_read_header`` (the xid of each answer). Wrapping fails loudly on a kazoo without them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kazoo.client import KazooClient

from ....errors import LockManagerUnavailableError
from .confirm import SYNC_TYPE, LeaderConfirmer, SyncChain

log = logging.getLogger("sparklock.zookeeper")

#: kazoo's xid of pings (``kazoo.protocol.connection.PING_XID``).
PING_XID = -2

#: Answers that say the session is no longer the client's (SESSIONEXPIRED, SESSIONMOVED).
DEAD_SESSION_ERRORS = frozenset({-112, -118})

#: ``listener(session_id, deadline_ns)``, on kazoo's connection thread: must not block.
LeaseListener = Callable[[int, int], None]

_HOOKS = ("_connect", "_submit", "_read_header")

#: Syncs per session timeout in an ensemble: the lease runs about ``timeout - margin -
#: timeout/4 - timeout/12`` ahead after each renewal, renewed every twelfth of the timeout.
SYNCS_PER_TIMEOUT = 12


class LeaseClock:
    """The deadline of the current session of one kazoo client (``time.monotonic_ns()``)."""

    def __init__(self, session_timeout: float, margin: float) -> None:
        self.requested_ns = int(session_timeout * 1e9)
        self.margin_ns = int(margin * 1e9)
        self._timeout_ns = self.requested_ns  # min(requested, negotiated) once connected
        self._sent: dict[int, int] = {}  # xid -> send time (connection thread only)
        #: (session id, deadline ns), replaced whole; (0, 0) before the first session
        self.term: tuple[int, int] = (0, 0)
        self._listeners: list[LeaseListener] = []
        self._guard = threading.Lock()
        #: connections so far, and whether the current one is to a standalone server (None:
        #: not known yet; only a standalone server's answers renew the lease directly)
        self.connection = 0
        self.standalone: bool | None = None
        self._chain = SyncChain()
        self._syncs: set[int] = set()  # xids of syncs in flight (connection thread only)
        self._confirmer: LeaderConfirmer | None = None
        self._session_timeout = session_timeout

    # -- what the service and the JVM read ---------------------------------------------------
    def lease(self) -> tuple[int, int]:
        """``(session id, deadline ns)``: the session's locks are held until the deadline."""
        return self.term

    def add_listener(self, listener: LeaseListener) -> None:
        with self._guard:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def remove_listener(self, listener: LeaseListener) -> None:
        with self._guard:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def learned(self, connection: int, standalone: bool | None) -> None:
        """What the server of ``connection`` is; unknown counts as an ensemble (the safe side)."""
        with self._guard:
            if connection == self.connection:
                self.standalone = bool(standalone)

    # -- renewals -----------------------------------------------------------------------------
    def _renew(self, session_id: int, sent_ns: int) -> None:
        deadline = sent_ns + self._timeout_ns - self.margin_ns
        old_id, old_deadline = self.term
        if session_id == old_id and deadline <= old_deadline:
            return
        self.term = (session_id, deadline)
        for listener in self._listeners:
            try:
                listener(session_id, deadline)
            except Exception:  # a listener must never stop kazoo's connection thread
                log.exception("sparklock: lease listener failed")

    def attach(self, client: KazooClient) -> None:
        """Observe ``client``'s connection: what renews the lease (every answer of a standalone
        server; in an ensemble the leader's confirmations, see :mod:`.confirm`)."""
        conn = getattr(client, "_connection", None)
        if conn is None or not all(callable(getattr(conn, h, None)) for h in _HOOKS):
            raise LockManagerUnavailableError(
                "this kazoo has no ConnectionHandler._connect/_submit/_read_header, which the "
                "lease of the ZooKeeper locks observes; install kazoo 2.9-2.11"
            )
        connect, submit, read_header = (getattr(conn, h) for h in _HOOKS)
        sent, syncs = self._sent, self._syncs

        def _connect(*args, **kwargs):
            sent.clear()  # answers to the old connection's requests will never come
            syncs.clear()
            self._chain.reset()
            with self._guard:
                self.connection += 1
                self.standalone = None
            asked = time.monotonic_ns()
            read_timeout, connect_timeout = connect(*args, **kwargs)
            # kazoo derives its read timeout as 2/3 of the negotiated session timeout (ms)
            negotiated = int(read_timeout * 1.5 * 1e6)
            self._timeout_ns = min(self.requested_ns, negotiated)
            # sound in an ensemble too: the leader created the session, or touched it when the
            # server revalidated it (``Leader.revalidateSession``)
            self._renew(int(client._session_id or 0), asked)
            self._confirm(client)
            return read_timeout, connect_timeout

        def _submit(request, timeout, xid=None):
            if xid is not None:
                sent[xid] = time.monotonic_ns()
                if getattr(request, "type", None) == SYNC_TYPE:
                    syncs.add(xid)
            return submit(request, timeout, xid)

        def _read_header(timeout):
            header, buffer, offset = read_header(timeout)
            at = sent.pop(header.xid, None)
            sync = header.xid in syncs
            syncs.discard(header.xid)
            if (
                at is not None
                and (header.xid > 0 or header.xid == PING_XID)
                and header.err not in DEAD_SESSION_ERRORS
            ):
                if self.standalone:
                    self._renew(int(client._session_id or 0), at)
                elif sync and header.err == 0:
                    gap = self._timeout_ns // 4
                    confirmed = self._chain.answered(at, time.monotonic_ns(), gap)
                    if confirmed is not None:
                        self._renew(int(client._session_id or 0), confirmed)
            return header, buffer, offset

        conn._connect, conn._submit, conn._read_header = _connect, _submit, _read_header

    def _confirm(self, client: KazooClient) -> None:
        """Start the syncs of :mod:`.confirm` once the client runs (on kazoo's connection
        thread: starting a thread does not block)."""
        confirmer = self._confirmer
        # a client written off and replaced gets a confirmer of its own (the old one ends with
        # its stopped client)
        if confirmer is None or confirmer.client is not client or not confirmer.alive:
            timeout = self._session_timeout
            self._confirmer = LeaderConfirmer(client, self, timeout / SYNCS_PER_TIMEOUT, timeout)
            self._confirmer.start()


__all__ = ["PING_XID", "LeaseClock", "LeaseListener"]
