"""The process's one ZooKeeper session: a shared, reference-counted kazoo client per quorum
(and identity: TLS and credentials, see :mod:`.secure_connect`).

Hive learnt this the hard way (HIVE-9119): a client per query exhausts ZooKeeper's connection
limit. Besides the connection this module owns the session *generation* (bumped on every lost
session, so a manager knows which ephemeral locks died with it), Curator's *session expiration
simulation* (disconnected for longer than the session timeout means lost: the client is written
off and abandoned, never resumed), and a worker thread that tells subscribers about lost sessions
(kazoo's listener runs on its connection thread and must not block).
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
import warnings
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    OperationTimeoutError,
    SessionExpiredError,
    SessionMovedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

from .... import telemetry
from ....errors import LockManagerUnavailableError
from . import secure_connect
from .lease import LeaseClock
from .owners import OwnerRegistry
from .security import PLAIN, ZooKeeperSecurity

#: The backend's name (``spark.sparklock.manager``): its connection state is reported under it.
BACKEND_NAME = "zookeeper"

log = logging.getLogger("sparklock.zookeeper")

#: Failures after which a request can simply be retried once the connection is back.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionLoss,
    OperationTimeoutError,
    SessionMovedError,
    KazooTimeoutError,
    SessionExpiredError,  # only between an expiry and kazoo's new session
)

SessionListener = Callable[[int, str], None]

#: Wakes the worker so that it recomputes how long to wait (a suspension started).
_WAKE = object()
#: ``(_ABANDON, client)``: the worker drops a client whose credentials were refused.
_ABANDON = object()


class SharedZooKeeperClient:
    """One kazoo client (one ZooKeeper session at a time) shared by everything in the process."""

    def __init__(
        self,
        quorum: str,
        session_timeout: float,
        connection_timeout: float,
        security: ZooKeeperSecurity = PLAIN,
        lease_margin: float | None = None,
    ) -> None:
        self.quorum = quorum
        #: the lease of this client's sessions, which the JVM enforces (see .lease)
        self.lease = LeaseClock(
            session_timeout, session_timeout / 3 if lease_margin is None else lease_margin
        )
        self.security = security  # TLS, credentials, the ACL of created nodes
        self.session_timeout = session_timeout
        self.connection_timeout = connection_timeout
        self.client: KazooClient | None = None
        self.generation = 0  # bumped on every lost session
        self.multi_read: bool | None = None  # whether the servers know multiRead (see transport)
        self._refs = 0
        self._lock = threading.RLock()
        self._connected = threading.Event()
        self._listeners: list[SessionListener] = []
        self._events: queue.Queue = queue.Queue()
        self._worker: threading.Thread | None = None
        self._stopping = False
        # Guards the state the connection thread's listener writes (it must never wait on
        # ``_lock``, which ``ensure_started`` holds while it waits for that very thread).
        self._state_lock = threading.Lock()
        self._current: KazooClient | None = None  # whose state changes count
        self._suspended: tuple[KazooClient, float] | None = None  # and when it is presumed lost
        self.registry_key: tuple = ()

    # -- lifecycle ----------------------------------------------------------------------------
    def ensure_started(self) -> KazooClient:
        """The started kazoo client; connects on first use (LockManagerUnavailableError if not)."""
        client = self.client
        if client is not None:
            return client
        with self._lock:
            if self.client is not None:
                return self.client
            if self._refs <= 0:
                raise LockManagerUnavailableError(
                    f"the ZooKeeper client for {self.quorum} has been closed"
                )
            client, watch = secure_connect.new_client(
                self.quorum, self.session_timeout, self.security
            )
            client.add_listener(functools.partial(self._on_state, client))
            self.lease.attach(client)
            with self._state_lock:
                self._current = client
            self._stopping = False
            try:
                with warnings.catch_warnings():
                    # kazoo warns when the chroot does not exist yet; it is created below.
                    warnings.simplefilter("ignore")
                    secure_connect.start(
                        client, watch, self.quorum, self.connection_timeout, self.security
                    )
                self._ensure_chroot(client)
            except LockManagerUnavailableError:
                self._stop_client(client)
                raise
            except Exception as exc:
                self._stop_client(client)
                raise LockManagerUnavailableError(
                    f"cannot connect to ZooKeeper quorum {self.quorum} within "
                    f"{self.connection_timeout:g} s ({type(exc).__name__}: {exc})"
                ) from exc
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._run_worker, name="sparklock-zk-events", daemon=True
                )
                self._worker.start()
            self.client = client
            log.info(
                "sparklock: connected to ZooKeeper %s (%s)", self.quorum, self.security.describe()
            )
            return client

    @staticmethod
    def _ensure_chroot(client: KazooClient) -> None:
        """Create the quorum's ``/chroot`` if missing (a chrooted client cannot create it)."""
        if not client.chroot or client.exists("/") is not None:
            return
        chroot, client.chroot = client.chroot, ""
        try:
            client.ensure_path(chroot)
        finally:
            client.chroot = chroot

    def _stop_client(self, client: KazooClient) -> None:
        self._stopping = True
        self._shut(client)

    @staticmethod
    def _shut(client: KazooClient) -> None:
        try:
            client.stop()
            client.close()
        except Exception:  # pragma: no cover - best effort on the way out
            log.debug("sparklock: stopping the ZooKeeper client failed", exc_info=True)

    def _retain(self) -> None:
        with self._lock:
            self._refs += 1

    def _release(self) -> bool:
        """Drop one reference; stop the client when it was the last. True if stopped."""
        with self._lock:
            self._refs -= 1
            if self._refs > 0:
                return False
            client, self.client = self.client, None
            if client is not None:
                self._stop_client(client)
            with self._state_lock:
                self._current = self._suspended = None
            if self._worker is not None:
                self._events.put(None)
                self._worker = None
            self._connected.clear()
            return True

    # -- connection state ---------------------------------------------------------------------
    def _on_state(self, client: KazooClient, state: str) -> None:
        """kazoo's listener, on its connection thread: record and hand over, never block."""
        with self._state_lock:
            if client is not self._current:
                return  # an abandoned client's last words: its session was written off already
            self._suspended = (
                (client, time.monotonic() + self.session_timeout)
                if state == KazooState.SUSPENDED
                else None
            )
            lost = self.generation
            if state == KazooState.LOST:
                self.generation = lost + 1
        telemetry.backend_state(BACKEND_NAME, str(state))  # queued: never blocks
        if state == KazooState.CONNECTED:
            self._connected.set()
        elif state == KazooState.SUSPENDED:
            self._connected.clear()
            log.warning("sparklock: ZooKeeper connection to %s suspended", self.quorum)
            self._events.put(_WAKE)
        elif state == KazooState.LOST:
            self._connected.clear()
            reason = "ZooKeeper session closed" if self._stopping else "ZooKeeper session expired"
            refused = not self._stopping and secure_connect.credentials_refused(client)
            ended = not self._stopping and _connection_ended(client)
            if refused:
                # kazoo gives up for good on a refused login (a changed password, an expired
                # Kerberos ticket): drop the client, so the next statement connects anew
                reason = secure_connect.refused_on_reconnect(self.quorum, self.security)
            elif ended:
                reason = "kazoo's connection thread ended (see its log): connecting anew"
            self._events.put((lost, reason))
            if refused or ended:
                self._events.put((_ABANDON, client))

    def _run_worker(self) -> None:
        while True:
            with self._state_lock:
                suspended = self._suspended
            wait = None if suspended is None else max(0.0, suspended[1] - time.monotonic())
            try:
                event = self._events.get(timeout=wait)
            except queue.Empty:
                assert suspended is not None
                self._presume_expired(suspended)
                continue
            if event is None:
                return
            if event is _WAKE:
                continue
            if event[0] is _ABANDON:
                self._abandon(event[1])
            else:
                self._notify(*event)

    def _abandon(self, client: KazooClient) -> None:
        """Forget ``client`` (its login was refused); the next request starts a new one."""
        with self._state_lock:
            if self._current is client:
                self._current = None
        with self._lock:
            if self.client is client:
                self.client = None
        self._shut(client)

    def _presume_expired(self, suspended: tuple[KazooClient, float]) -> None:
        """Suspended for a whole session timeout: the servers have expired the session (no
        heartbeat reached them), so its ephemeral locks are gone; say so as a LOST would.

        The timeout is the one requested: kazoo 2.11 does not keep the negotiated one (a local
        of its ``ConnectionHandler._connect``). A server that negotiated it down expires the
        session earlier than this (found late, as before); one that raised it to its
        ``minSessionTimeout`` later (found early: the locks are written off while still held,
        which fails statements but lets no one in).

        The client is abandoned, not left to reconnect: a server that was down for good or
        restarted may still resume the session, and the write-off must hold. Its session ends
        on the servers at its timeout (or at once, through the close, if it reconnected
        meanwhile); the next request starts a new client and session.
        """
        client = suspended[0]
        with self._state_lock:
            if self._suspended is not suspended:
                return  # reconnected, or lost for real, meanwhile
            self._suspended = None
            self._current = None
            lost = self.generation
            self.generation = lost + 1
        with self._lock:
            if self.client is client:
                self.client = None
        self._notify(
            lost,
            f"ZooKeeper session presumed expired (disconnected for more than its "
            f"{self.session_timeout:g} s session timeout)",
        )
        self._shut(client)

    def _notify(self, lost: int, reason: str) -> None:
        """Tell the session listeners (on the worker thread: they may block)."""
        if not self._stopping:
            log.error("sparklock: %s (%s); implicit locks of it are gone", reason, self.quorum)
        for listener in list(self._listeners):
            try:
                listener(lost, reason)
            except Exception:
                log.exception("sparklock: session listener failed")

    def add_session_listener(self, listener: SessionListener) -> None:
        """``listener(lost_generation, reason)`` runs on a worker thread after a session loss."""
        with self._lock:
            self._listeners.append(listener)

    def remove_session_listener(self, listener: SessionListener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def wait_connected(self, timeout: float) -> bool:
        """Whether the client is connected within ``timeout``; never raises (a pause between
        retries: a client abandoned after a presumed expiry may fail to start again)."""
        try:
            self.ensure_started()
        except LockManagerUnavailableError:
            return False
        return self._connected.wait(max(0.0, timeout))

    @property
    def session_id(self) -> int | None:
        client = self.client
        cid = client.client_id if client is not None else None
        return cid[0] if cid else None


def _connection_ended(client: KazooClient) -> bool:
    """Whether kazoo's connection thread ended unasked: an error its loop does not handle (an
    answer it cannot match to its request) ends it for good, and kazoo never reconnects."""
    stopped = getattr(getattr(client, "_connection", None), "connection_stopped", None)
    return stopped is not None and stopped.is_set()


_registry: dict[tuple, SharedZooKeeperClient] = {}
_owner_registries: dict[str, OwnerRegistry] = {}
_registry_lock = threading.Lock()


def _key(quorum: str, session_timeout: float, security: ZooKeeperSecurity, margin: float | None):
    return (quorum, float(session_timeout), security, margin)


def acquire_client(
    quorum: str,
    session_timeout: float,
    connection_timeout: float,
    security: ZooKeeperSecurity = PLAIN,
    lease_margin: float | None = None,
) -> SharedZooKeeperClient:
    """A reference to the process's client for ``quorum`` and identity (not connected until
    first use): two credentials (or lease margins) never share a session."""
    with _registry_lock:
        key = _key(quorum, session_timeout, security, lease_margin)
        shared = _registry.get(key)
        if shared is None:
            shared = SharedZooKeeperClient(
                quorum, session_timeout, connection_timeout, security, lease_margin
            )
            shared.registry_key = key
            _registry[key] = shared
        shared._retain()
        return shared


def release_client(shared: SharedZooKeeperClient) -> bool:
    """Give a reference back; the last one stops the client (its ephemeral nodes go). True then."""
    with _registry_lock:
        stopped = shared._release()
        if stopped:
            key = shared.registry_key
            if _registry.get(key) is shared:
                del _registry[key]
        return stopped


def owner_registry(quorum: str) -> OwnerRegistry:
    """The process-wide registry of lock znodes created here, per ZooKeeper quorum."""
    with _registry_lock:
        registry = _owner_registries.get(quorum)
        if registry is None:
            registry = _owner_registries[quorum] = OwnerRegistry()
        return registry


def active_clients() -> list[SharedZooKeeperClient]:
    with _registry_lock:
        return list(_registry.values())


__all__ = [
    "TRANSIENT_ERRORS",
    "SharedZooKeeperClient",
    "acquire_client",
    "active_clients",
    "owner_registry",
    "release_client",
]
