"""A Thrift client of the Hive metastore's lock API, in Python.

Why Python and not Hive's Java ``HiveMetaStoreClient`` over py4j: the CLI and the servers have no
Spark JVM, and the client in pyspark's jars is Hive 2.3's, which knows no Hive 4 lock type
(``EXCL_WRITE``) nor Hive 4's fields of SHOW LOCKS. This one speaks the protocol directly
(:mod:`.wire`), works against Hive 3 and 4 metastores alike, and needs only ``thrift``.

Connections are pooled (one per concurrent caller, reused): a driver's statements, its heartbeat
thread and its SHOW LOCKS never wait for each other's round trips. An idle connection the peer
closed meanwhile (a metastore restart, a network reset, a load balancer's idle timeout) is
dropped before reuse, so a ``lock`` request, which is never retried, is not sent into it. The URIs
are tried in order, as Hive's client does with ``hive.metastore.uris``.
"""

from __future__ import annotations

import select
import threading
from collections.abc import Sequence
from typing import Any

from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TException
from thrift.transport import TSocket, TTransport

from ...errors import LockManagerUnavailableError
from . import wire
from .uris import parse_uris


class MetastoreUnavailable(OSError):
    """No metastore URI answered (or a call's connection broke)."""


def odd_state(response: Any) -> LockManagerUnavailableError:
    """The error of a ``lock``/``check_lock`` answer that is neither granted nor waiting."""
    state = wire.LOCK_STATE_NAMES.get(response.state, response.state)
    return LockManagerUnavailableError(
        f"metastore answered {state} for lock request {response.lockid}"
        + (f": {response.errorMessage}" if response.errorMessage else "")
    )


class _Connection:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        sock = TSocket.TSocket(host, port)
        sock.setTimeout(int(timeout * 1000))
        self.socket = sock
        self.transport = TTransport.TBufferedTransport(sock)
        self.transport.open()
        self.protocol = TBinaryProtocol.TBinaryProtocolAccelerated(self.transport)
        self.seqid = 0
        self.address = f"{host}:{port}"

    def call(self, call: wire.Call, kwargs: dict[str, Any]) -> Any:
        self.seqid += 1
        call.write(self.protocol, self.seqid, **kwargs)
        return call.read(self.protocol)

    def dropped(self) -> bool:
        """Whether this idle connection is unusable: no answer is due on it, so a readable socket
        means the peer closed or reset it (or sent what no call asked for)."""
        handle = self.socket.handle
        if handle is None:
            return True
        try:
            readable, _, _ = select.select([handle], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self) -> None:
        try:
            self.transport.close()
        except Exception:  # noqa: BLE001 - closing a broken socket
            pass


class MetastoreClient:
    """The lock calls of one metastore (or a list of equivalent URIs)."""

    def __init__(self, uris: str | Sequence[str], *, timeout: float = 20.0) -> None:
        self.addresses = parse_uris(uris)
        self.timeout = timeout
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    # -- connections --------------------------------------------------------------------------
    def _open(self) -> _Connection:
        errors = []
        for host, port in self.addresses:
            try:
                return _Connection(host, port, self.timeout)
            except TException as e:
                errors.append(f"{host}:{port}: {e}")
        raise MetastoreUnavailable("no metastore answered: " + "; ".join(errors))

    def _take(self) -> _Connection:
        stale = []
        try:
            with self._lock:
                if self._closed:
                    raise MetastoreUnavailable("metastore client closed")
                while self._idle:
                    conn = self._idle.pop()
                    if not conn.dropped():
                        return conn
                    stale.append(conn)
        finally:
            for conn in stale:
                conn.close()
        return self._open()

    def _give(self, conn: _Connection) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()

    def call(self, call: wire.Call, *, retry: bool = True, **kwargs: Any) -> Any:
        """One call; a broken connection is dropped and, when ``retry`` (the call is
        idempotent), the call is made once more on a fresh one."""
        for attempt in (1, 2):
            conn = self._take()
            try:
                result = conn.call(call, kwargs)
            except (TTransport.TTransportException, OSError, EOFError) as e:
                conn.close()
                if retry and attempt == 1:
                    continue
                raise MetastoreUnavailable(f"{call.name} on {conn.address}: {e}") from e
            except wire.ThriftError:
                self._give(conn)  # a declared exception: the connection is fine
                raise
            except BaseException:
                conn.close()  # the stream may be mid-message
                raise
            self._give(conn)
            return result
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self) -> MetastoreClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the lock API -------------------------------------------------------------------------
    def lock(self, components: list, *, user: str, hostname: str, agent: str) -> Any:
        """``lock``: the whole set in one request (granted all-or-nothing, else queued).
        Not retried here: a lost answer may have left a request queued (the caller knows)."""
        request = wire.LockRequest(
            component=components, txnid=0, user=user, hostname=hostname, agentInfo=agent
        )
        return self.call(wire.LOCK, retry=False, rqst=request)

    def check_lock(self, lockid: int) -> Any:
        return self.call(wire.CHECK_LOCK, rqst=wire.CheckLockRequest(lockid=lockid))

    def unlock(self, lockid: int) -> None:
        self.call(wire.UNLOCK, rqst=wire.UnlockRequest(lockid=lockid))

    def heartbeat(self, lockid: int) -> None:
        self.call(wire.HEARTBEAT, ids=wire.HeartbeatRequest(lockid=lockid, txnid=0))

    def show_locks(
        self, dbname: str | None = None, tablename: str | None = None, partname: str | None = None
    ) -> list:
        request = wire.ShowLocksRequest(dbname=dbname, tablename=tablename, partname=partname)
        return self.call(wire.SHOW_LOCKS, rqst=request).locks or []

    def config_value(self, name: str, default: str) -> str:
        """A metastore setting (``get_config_value``): its lock timeout, for the heartbeats."""
        return self.call(wire.GET_CONFIG_VALUE, name=name, defaultValue=default)
