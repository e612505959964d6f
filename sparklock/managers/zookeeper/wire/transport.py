"""Requests to ZooKeeper: batched reads, write multis, retries, and kazoo errors as ours.

Operations are kazoo's own request types: reads are ``GetChildren``/``GetData`` (sent as one
``multiRead``, ZooKeeper 3.6+, or pipelined on older servers), writes ``Create``/``Delete`` (sent
as one ``multi``). kazoo moves one request per loop turn of its connection thread (~0.1 ms each
here), ``multiRead`` ~5 µs per operation, which is what makes a 10,000-partition walk or a
1,000-object grant check cheap. Paths are namespace paths; the client's chroot is added here.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    AuthFailedError,
    ConnectionLoss,
    InvalidACLError,
    KazooException,
    NoAuthError,
    UnimplementedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.serialization import Create, GetChildren
from kazoo.retry import KazooRetry, RetryFailedError

from ....errors import LockManagerUnavailableError, SparkLockError
from .coalescing import lanes_of
from .multi import MultiRead, WriteMulti
from .ops import (
    EPHEMERAL,
    MULTI_BYTES,
    MULTI_READ_OPS,
    SEQUENCE,
    ReadOp,
    WriteOp,
    op_bytes,
    reads_as_sent,
    writes_as_sent,
)
from .secure_connect import access_denied
from .session import TRANSIENT_ERRORS, SharedZooKeeperClient

log = logging.getLogger("sparklock.zookeeper")

T = TypeVar("T")


class NotConnected(ConnectionLoss):
    """A write that was not even sent: no connection within the wait."""


class Transport:
    """One manager's way to the shared client: every request, its retries, its errors."""

    def __init__(self, shared: SharedZooKeeperClient, op_timeout: float) -> None:
        self.shared = shared
        self.quorum = shared.quorum
        self.op_timeout = op_timeout
        # every manager of the process merges its requests with the others' (see .coalescing)
        quorum = self.quorum
        self.lanes = lanes_of(
            shared,
            MULTI_READ_OPS,
            MULTI_BYTES,
            lambda: NotConnected(f"not connected to ZooKeeper {quorum}"),
        )

    def client(self) -> KazooClient:
        return self.shared.ensure_started()

    # -- errors and retries -------------------------------------------------------------------
    def unavailable(self, what: str, exc: BaseException | None) -> LockManagerUnavailableError:
        detail = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
        return LockManagerUnavailableError(
            f"ZooKeeper {self.quorum} did not answer while {what} within "
            f"{self.op_timeout:g} s{detail}"
        )

    @contextlib.contextmanager
    def errors(self, what: str) -> Iterator[None]:
        """Kazoo failures that survived the retries become LOCK_MANAGER_UNAVAILABLE."""
        try:
            yield
        except SparkLockError:
            raise
        except (NoAuthError, AuthFailedError, InvalidACLError) as exc:
            message = access_denied(exc, self.quorum, what, self.shared.security)
            raise LockManagerUnavailableError(message) from exc
        except (KazooException, KazooTimeoutError, OSError) as exc:
            raise LockManagerUnavailableError(
                f"ZooKeeper {self.quorum}: {what} failed ({type(exc).__name__}: {exc})"
            ) from exc

    def retrying(self, fn: Callable[[], T], what: str, limit: float | None = None) -> T:
        """Run ``fn`` until it does not fail transiently, waiting for the connection between
        tries (kazoo's ``KazooRetry``: backoff from 20 ms to 0.5 s within the time limit)."""
        limit = self.op_timeout if limit is None else limit
        end = time.monotonic() + limit
        last: list[BaseException] = []

        def attempt() -> T:
            try:
                return fn()
            except TRANSIENT_ERRORS as exc:
                log.debug("sparklock: %s failed transiently (%r); retrying", what, exc)
                last[:] = [exc]
                raise

        def pause(seconds: float) -> None:
            self.shared.wait_connected(min(1.0, max(0.0, end - time.monotonic())))
            time.sleep(min(seconds, max(0.0, end - time.monotonic())))

        retry = KazooRetry(
            max_tries=-1,
            delay=0.02,
            max_delay=0.5,
            max_jitter=0.2,
            deadline=limit,
            sleep_func=pause,
        )
        retry.retry_exceptions = TRANSIENT_ERRORS
        try:
            return retry(attempt)
        except RetryFailedError as exc:
            raise self.unavailable(what, last[0] if last else exc) from exc

    # -- reads --------------------------------------------------------------------------------
    def read(self, ops: Sequence[ReadOp], what: str) -> list:
        """Many reads in one round trip, retried as a whole while failing transiently."""
        return self.retrying(lambda: self.read_once(ops), what)

    def read_once(self, ops: Sequence[ReadOp]) -> list:
        """One batched read (results as ``ReadOp`` says); transient failures raise."""
        if not ops:
            return []
        shared = self.shared
        client = shared.ensure_started()
        if shared.multi_read is not False and hasattr(client, "_call"):
            results = self._read_multi(client, ops)
            if results is not None:
                shared.multi_read = True
                return results
            log.info("sparklock: ZooKeeper %s has no multiRead; pipelining reads", self.quorum)
            shared.multi_read = False
        return self._read_pipelined(client, ops)

    def _read_multi(self, client: KazooClient, ops: Sequence[ReadOp]) -> list | None:
        """None when the server does not know multiRead."""
        chroot = client.chroot or ""
        if self.shared.multi_read and len(ops) <= MULTI_READ_OPS:
            ops = reads_as_sent(chroot, ops)
            return self.lanes.reads.submit(client, ops, len(ops), self.op_timeout)[0]
        pending = []
        for start in range(0, len(ops), MULTI_READ_OPS):
            requests = reads_as_sent(chroot, ops[start : start + MULTI_READ_OPS])
            async_result = client.handler.async_result()
            client._call(MultiRead(requests), async_result)
            pending.append(async_result)
        results: list = []
        for async_result in pending:
            try:
                part = async_result.get(timeout=self.op_timeout)
            except UnimplementedError:
                return None
            if part is None:
                return None
            results.extend(part)
        return results

    def _read_pipelined(self, client: KazooClient, ops: Sequence[ReadOp]) -> list:
        pending = [
            client.get_children_async(op.path)
            if type(op) is GetChildren
            else client.get_async(op.path)
            for op in ops
        ]
        results: list = []
        for async_result in pending:
            try:
                results.append(async_result.get(timeout=self.op_timeout))
            except TRANSIENT_ERRORS:
                raise
            except KazooException as exc:
                results.append(exc)
        return results

    # -- writes -------------------------------------------------------------------------------
    def commit(
        self,
        ops: Sequence[WriteOp],
        what: str,
        connect_wait: float | None = None,
        size: int | None = None,
    ) -> list:
        """One write multi, answered per operation (see ``WriteOp``).

        Issued only while connected (waiting up to ``connect_wait``), so that a request can never
        linger in kazoo's queue and run after we gave up on it. Transient failures raise (the
        caller decides whether a retry is safe); per-operation failures come back in the results.
        ``size``: what ``ops`` weigh (``op_bytes`` summed) when the caller knows it already.
        """
        return self.commit_then_read(ops, (), what, connect_wait, size)[0]

    def commit_batches(
        self,
        batches: Sequence[tuple[Sequence[WriteOp], int]],
        what: str,
        reads: Sequence[Sequence[ReadOp]] = (),
        connect_wait: float | None = None,
    ) -> tuple[list[list | BaseException], list[list | None]]:
        """Several write multis (each ``(ops, size)``), pipelined: all sent, then every answer
        read — one round trip and the server's time for a wide lock set instead of one round
        trip per multi. ZooKeeper applies a session's requests in the order sent, so a batch
        sees the tree the earlier ones left, but each multi is atomic on its own: one may fail
        while the others went through, and the caller sorts that out per batch.

        Per batch: its results (see ``WriteOp``), or the exception that failed the whole request
        (transient: the outcome is unknown; ``NotConnected``: never sent). ``reads[k]`` (when
        given) travel right behind batch k; their answers come second, per batch (None when not
        sent along or failed, as ``commit_then_read``'s). Raises ``NotConnected`` when nothing
        could be sent.
        """
        reads = list(reads) or [()] * len(batches)
        if len(batches) == 1:
            ops, size = batches[0]
            try:
                results, read = self.commit_then_read(ops, reads[0], what, connect_wait, size)
            except NotConnected:
                raise
            except TRANSIENT_ERRORS as exc:
                return [exc], [None]
            return [results], [read]
        client = self.client()
        wait = self.op_timeout if connect_wait is None else connect_wait
        if not self.shared.wait_connected(wait):
            raise NotConnected(f"not connected to ZooKeeper {self.quorum} within {wait:g} s")
        chroot = client.chroot or ""
        reading = bool(self.shared.multi_read)
        requests = []
        for (ops, size), along in zip(batches, reads, strict=True):
            sent = writes_as_sent(client, ops)
            if sent is not None:
                ops, size = sent, sum(map(op_bytes, sent))
            behind = None
            if along and reading and len(along) <= MULTI_READ_OPS:
                behind = reads_as_sent(chroot, along)
            requests.append((ops, size, behind))
        lane = self.lanes.writes
        sent = lane.send_all(client, requests)
        outcomes: list[list | BaseException] = []
        answers: list[list | None] = []
        gave_up = False
        for member in sent:
            if gave_up and lane.withdraw(member):
                outcomes.append(NotConnected("not sent: an earlier multi of the set timed out"))
                answers.append(None)
                continue
            try:
                results, got = lane.wait(member, self.op_timeout)
            except TRANSIENT_ERRORS as exc:
                gave_up = gave_up or isinstance(exc, KazooTimeoutError)
                outcomes.append(exc)
                answers.append(None)
                continue
            outcomes.append(results)
            answers.append(got if isinstance(got, list) else None)
        return outcomes, answers

    def commit_then_read(
        self,
        ops: Sequence[WriteOp],
        reads: Sequence[ReadOp],
        what: str,
        connect_wait: float | None = None,
        size: int | None = None,
    ) -> tuple[list, list | None]:
        """``commit``, and ``reads`` sent right behind the multi without waiting for its answer:
        ZooKeeper runs a session's requests in order, so they read the tree as the multi left it,
        one round trip sooner. Their answers come second: None when they could not be sent along
        (no multiRead, a multi too big to share) or failed — read again then. ``size``: what
        ``ops`` weigh (``op_bytes`` summed) when the caller knows it already.
        """
        client = self.client()
        wait = self.op_timeout if connect_wait is None else connect_wait
        if not self.shared.wait_connected(wait):
            raise NotConnected(f"not connected to ZooKeeper {self.quorum} within {wait:g} s")
        if not hasattr(client, "_call"):  # pragma: no cover - a kazoo without the private call
            tx = client.transaction()
            for op in ops:
                if type(op) is Create:
                    tx.create(
                        op.path,
                        op.data,
                        ephemeral=bool(op.flags & EPHEMERAL),
                        sequence=bool(op.flags & SEQUENCE),
                    )
                else:
                    tx.delete(op.path)
            return tx.commit_async().get(timeout=self.op_timeout), None
        # The multi sent as built: kazoo's transaction() normalises and checks every path again
        # (~10 us an operation, most of a 10,000-partition lock set's time).
        sent = writes_as_sent(client, ops)
        if sent is not None:
            ops, size = sent, None  # the chroot makes every path longer
        if size is None:
            size = sum(map(op_bytes, ops))
        if size <= MULTI_BYTES:  # merged with other threads' multis meanwhile (results unchrooted)
            along = None
            if reads and self.shared.multi_read:
                along = reads_as_sent(client.chroot or "", reads)
            results, read = self.lanes.writes.submit(client, ops, size, self.op_timeout, along)
            return results, read if isinstance(read, list) else None
        async_result = client.handler.async_result()
        client._call(WriteMulti(list(ops)), async_result)  # results come unchrooted
        return async_result.get(timeout=self.op_timeout), None
