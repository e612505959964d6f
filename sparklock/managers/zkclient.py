"""The one ZooKeeper (kazoo) client per process, shared by every manager, thread and Spark session.

Hive learnt this the hard way (HIVE-9119): a client per query exhausts ZooKeeper's connection
limit. Here a registry keyed by (quorum, session timeout) hands out one reference-counted
:class:`SharedZooKeeperClient`; the kazoo client behind it is started lazily on first use and
stopped when the last manager using it closes.

Besides the connection, the shared client owns:

* the session *generation*: a counter bumped whenever the session is lost (expired or closed), so
  a manager can tell which of its ephemeral locks died with which session;
* Curator's *session expiration simulation*: kazoo reports a session LOST only when a server it
  reconnects to says so, and stays SUSPENDED for as long as no server answers. A client
  disconnected for longer than the session timeout has certainly lost its session on the server
  side, so the shared client then declares it lost itself and abandons it (a new kazoo client,
  hence a new session, is started on next use; the old one must never be resumed, or ephemeral
  locks this process has written off would live on with it);
* a worker thread that tells subscribers about lost sessions (kazoo's state listener runs on its
  connection thread and must not block, so it only records the change and hands it over);
* batched reads: many ``getChildren``/``getData`` in one ``multiRead`` request (ZooKeeper 3.6+),
  falling back to kazoo's pipelined ``*_async`` calls on servers without it. kazoo moves one
  request per loop turn of its connection thread (~0.1 ms each here), ``multiRead`` ~5 µs per
  operation, which is what makes a 10,000-partition walk or a 1,000-object grant check cheap.

The per-quorum :class:`OwnerRegistry` remembers which lock znodes this process created for which
owner, so the grant rule can ignore a session's own explicit (``LOCK TABLE``) locks.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
import warnings
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import (
    EXCEPTIONS,
    ConnectionLoss,
    KazooException,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
    SessionMovedError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import (
    Create,
    Delete,
    GetChildren,
    GetData,
    MultiHeader,
    Transaction,
    ZnodeStat,
    int_struct,
    multiheader_struct,
    read_buffer,
    read_string,
    stat_struct,
)
from kazoo.protocol.states import KazooState

from ..errors import LockManagerUnavailableError
from ..model import LockType

log = logging.getLogger("sparklock.zookeeper")

#: Failures after which a request can simply be retried once the connection is back.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionLoss,
    OperationTimeoutError,
    SessionMovedError,
    KazooTimeoutError,
    SessionExpiredError,  # only between an expiry and kazoo's new session
)

#: Operations per multiRead request (keeps each request far below jute.maxbuffer).
MULTI_READ_OPS = 1000

CHILDREN = "children"
DATA = "data"


class MultiRead(namedtuple("MultiRead", "operations")):
    """ZooKeeper's ``multiRead`` (opcode 22, ZooKeeper 3.6+): independent reads in one request.

    Unlike a write ``multi`` nothing is atomic: every operation gets its own result or error.
    ``deserialize`` returns ``None`` for an empty body, which is what a server that does not know
    the opcode answers.
    """

    type = 22

    def serialize(self) -> bytearray:
        b = bytearray()
        for op in self.operations:
            b.extend(MultiHeader(op.type, False, -1).serialize())
            b.extend(op.serialize())
        b.extend(multiheader_struct.pack(-1, True, -1))
        return b

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> list | None:
        if offset >= len(buf):
            return None
        results: list = []
        header, offset = MultiHeader.deserialize(buf, offset)
        while not header.done:
            if header.type == GetChildren.type:
                count = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                children = []
                for _ in range(max(count, 0)):
                    child, offset = read_string(buf, offset)
                    children.append(child)
                results.append(children)
            elif header.type == GetData.type:
                data, offset = read_buffer(buf, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(buf, offset))
                offset += stat_struct.size
                results.append((data, stat))
            elif header.type == -1:
                err = int_struct.unpack_from(buf, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[err]())
            else:  # pragma: no cover - a server answering with an op we did not send
                raise ValueError(f"unexpected multiRead result type {header.type}")
            header, offset = MultiHeader.deserialize(buf, offset)
        return results


def _object_paths(lock_path: str) -> Iterator[str]:
    """The object nodes above a lock node: ``/ns/db/t/LOCK-..`` -> ``/ns/db/t``, ``/ns/db``,
    ``/ns``."""
    path = lock_path
    while True:
        path = path.rpartition("/")[0]
        if not path:
            return
        yield path


_CREATE_HEADER = multiheader_struct.pack(Create.type, False, -1)
_DELETE_HEADER = multiheader_struct.pack(Delete.type, False, -1)
_MULTI_DONE = multiheader_struct.pack(-1, True, -1)


class WriteMulti(Transaction):
    """kazoo's ``Transaction`` (the same request and answer; kazoo still unchroots the created
    paths) with a serializer and parser made for what lock sets consist of — creates and
    deletes, by the thousand — about five times cheaper than building them op by op."""

    __slots__ = ()

    def serialize(self) -> bytes:
        pack = int_struct.pack
        acls: dict[int, bytes] = {}
        parts = []
        for op in self.operations:
            kind = type(op)
            if kind is Create and op.path and op.data is not None:
                acl = acls.get(id(op.acl))
                if acl is None:
                    acl = acls[id(op.acl)] = bytes(Create("", b"", op.acl, 0).serialize()[8:-4])
                path = op.path.encode("utf-8")
                parts.append(
                    b"".join(
                        (_CREATE_HEADER, pack(len(path)), path, pack(len(op.data)), op.data, acl)
                    )
                    + pack(op.flags)
                )
            elif kind is Delete and op.path:
                path = op.path.encode("utf-8")
                parts.append(b"".join((_DELETE_HEADER, pack(len(path)), path, pack(op.version))))
            else:
                parts.append(bytes(MultiHeader(op.type, False, -1).serialize() + op.serialize()))
        parts.append(_MULTI_DONE)
        return b"".join(parts)

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> list:
        header = multiheader_struct.unpack_from
        size = multiheader_struct.size
        number = int_struct.unpack_from
        results: list = []
        kind, done, _ = header(buf, offset)
        offset += size
        while done != 1:
            if kind == Create.type:
                length = number(buf, offset)[0]
                offset += 4
                results.append(buf[offset : offset + length].decode("utf-8"))
                offset += length
            elif kind == Delete.type:
                results.append(True)
            elif kind == -1:
                results.append(EXCEPTIONS[number(buf, offset)[0]]())
                offset += 4
            else:  # pragma: no cover - we send only creates and deletes
                raise ValueError(f"unexpected multi result type {kind}")
            kind, done, _ = header(buf, offset)
            offset += size
        return results


class OwnerRegistry:
    """``znode path -> (owner, lock type)`` of the lock nodes this process created.

    It also counts, per object node, this process's lock nodes at or below it (``local_count``):
    a node with a lock of ours below it exists and is not empty, which lets the manager skip
    reading the tree where it already knows the answer. And it counts the acquisitions under
    way that will use a node (``hold``): a release must not delete a node another thread of
    this process is about to create a lock under (``local_busy``), or the threads of one
    process would delete and re-create their shared database node against each other.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[str, LockType]] = {}
        self._below: dict[str, int] = {}  # object path -> our lock nodes at or below it
        self._held: dict[str, int] = {}  # object path -> acquisitions under way that use it

    def add(self, paths: Iterable[str], owner: str, lock_type: LockType) -> None:
        with self._lock:
            for p in paths:
                if p not in self._entries:
                    for obj in _object_paths(p):
                        self._below[obj] = self._below.get(obj, 0) + 1
                self._entries[p] = (owner, lock_type)

    def forget(self, paths: Iterable[str]) -> set[str]:
        """Forget lock nodes; returns the object nodes no lock or acquisition of this process
        uses any more because of it."""
        unused: set[str] = set()
        with self._lock:
            for p in paths:
                if self._entries.pop(p, None) is None:
                    continue
                for obj in _object_paths(p):
                    left = self._below[obj] - 1
                    if left:
                        self._below[obj] = left
                    else:
                        del self._below[obj]
                        if obj not in self._held:
                            unused.add(obj)
        return unused

    def local_count(self, object_path: str) -> int:
        """This process's registered lock nodes at or below ``object_path``."""
        return self._below.get(object_path, 0)

    def local_busy(self, object_path: str) -> int:
        """``local_count`` plus the acquisitions under way that use ``object_path``."""
        return self._below.get(object_path, 0) + self._held.get(object_path, 0)

    def held_count(self, object_path: str) -> int:
        """Acquisitions under way (``hold``) that use ``object_path``."""
        return self._held.get(object_path, 0)

    def hold(self, object_paths: Iterable[str]) -> None:
        with self._lock:
            for p in object_paths:
                self._held[p] = self._held.get(p, 0) + 1

    def unhold(self, object_paths: Iterable[str]) -> None:
        with self._lock:
            for p in object_paths:
                left = self._held[p] - 1
                if left:
                    self._held[p] = left
                else:
                    del self._held[p]

    def owner_of(self, path: str) -> str | None:
        entry = self._entries.get(path)
        return entry[0] if entry else None

    def is_own_explicit(self, path: str, owner: str) -> bool:
        entry = self._entries.get(path)
        return entry is not None and entry[0] == owner and entry[1] is LockType.EXPLICIT

    def __len__(self) -> int:
        return len(self._entries)


SessionListener = Callable[[int, str], None]

#: Wakes the worker so that it recomputes how long to wait (a suspension started).
_WAKE = object()


class SharedZooKeeperClient:
    """One kazoo client (one ZooKeeper session at a time) shared by everything in the process."""

    def __init__(self, quorum: str, session_timeout: float, connection_timeout: float) -> None:
        self.quorum = quorum
        self.session_timeout = session_timeout
        self.connection_timeout = connection_timeout
        self.client: KazooClient | None = None
        self.generation = 0  # bumped on every lost session
        self.multi_read: bool | None = None  # unknown until the first batched read
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
            client = KazooClient(
                hosts=self.quorum,
                timeout=self.session_timeout,
                connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 1.0},
            )
            client.add_listener(functools.partial(self._on_state, client))
            with self._state_lock:
                self._current = client
            self._stopping = False
            try:
                with warnings.catch_warnings():
                    # kazoo warns when the chroot does not exist yet; it is created below.
                    warnings.simplefilter("ignore")
                    client.start(timeout=self.connection_timeout)
                self._ensure_chroot(client)
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
            log.info("sparklock: connected to ZooKeeper %s", self.quorum)
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
        if state == KazooState.CONNECTED:
            self._connected.set()
        elif state == KazooState.SUSPENDED:
            self._connected.clear()
            log.warning("sparklock: ZooKeeper connection to %s suspended", self.quorum)
            self._events.put(_WAKE)
        elif state == KazooState.LOST:
            self._connected.clear()
            reason = "ZooKeeper session closed" if self._stopping else "ZooKeeper session expired"
            self._events.put((lost, reason))

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
            if event is not _WAKE:
                self._notify(*event)

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

    # -- batched reads ------------------------------------------------------------------------
    def read(self, ops: Sequence[tuple[str, str]], timeout: float) -> list:
        """Run many reads; ``ops`` are ``(CHILDREN|DATA, path)``.

        Per operation the result is the children list, ``(data, stat)``, or the exception
        instance of a per-node failure (``NoNodeError``...). Transient failures raise.
        """
        if not ops:
            return []
        client = self.ensure_started()
        if self.multi_read is not False and hasattr(client, "_call"):
            results = self._read_multi(client, ops, timeout)
            if results is not None:
                self.multi_read = True
                return results
            log.info("sparklock: ZooKeeper %s has no multiRead; pipelining reads", self.quorum)
            self.multi_read = False
        return self._read_pipelined(client, ops, timeout)

    def _read_multi(
        self, client: KazooClient, ops: Sequence[tuple[str, str]], timeout: float
    ) -> list | None:
        chroot = client.chroot or ""
        pending = []
        for start in range(0, len(ops), MULTI_READ_OPS):
            requests = []
            for kind, path in ops[start : start + MULTI_READ_OPS]:
                full = ((chroot + path).rstrip("/") or "/") if chroot else path
                op = GetChildren if kind == CHILDREN else GetData
                requests.append(op(full, None))
            async_result = client.handler.async_result()
            client._call(MultiRead(requests), async_result)
            pending.append(async_result)
        results: list = []
        for async_result in pending:
            try:
                part = async_result.get(timeout=timeout)
            except UnimplementedError:
                return None
            if part is None:
                return None
            results.extend(part)
        return results

    @staticmethod
    def _read_pipelined(client: KazooClient, ops: Sequence[tuple[str, str]], timeout: float):
        pending = [
            client.get_children_async(path) if kind == CHILDREN else client.get_async(path)
            for kind, path in ops
        ]
        results: list = []
        for async_result in pending:
            try:
                results.append(async_result.get(timeout=timeout))
            except TRANSIENT_ERRORS:
                raise
            except KazooException as exc:
                results.append(exc)
        return results


_registry: dict[tuple[str, float], SharedZooKeeperClient] = {}
_owner_registries: dict[str, OwnerRegistry] = {}
_registry_lock = threading.Lock()


def acquire_client(
    quorum: str, session_timeout: float, connection_timeout: float
) -> SharedZooKeeperClient:
    """A reference to the process's client for ``quorum`` (not connected until first use)."""
    with _registry_lock:
        key = (quorum, float(session_timeout))
        shared = _registry.get(key)
        if shared is None:
            shared = SharedZooKeeperClient(quorum, session_timeout, connection_timeout)
            _registry[key] = shared
        shared._retain()
        return shared


def release_client(shared: SharedZooKeeperClient) -> bool:
    """Give a reference back; the last one stops the client (its ephemeral nodes go). True then."""
    with _registry_lock:
        stopped = shared._release()
        if stopped:
            key = (shared.quorum, float(shared.session_timeout))
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
    "CHILDREN",
    "DATA",
    "NoNodeError",
    "OwnerRegistry",
    "SharedZooKeeperClient",
    "TRANSIENT_ERRORS",
    "acquire_client",
    "active_clients",
    "owner_registry",
    "release_client",
]
