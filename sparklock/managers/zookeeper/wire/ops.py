"""ZooKeeper requests as values: the reads and writes a lock set is made of, what they weigh,
how they are cut into multis, and how they look once the client's chroot and ACL are added.

kazoo's own request types (``GetChildren``/``GetData``, ``Create``/``Delete``), built here and
sent by :mod:`.transport`; nothing here talks to a server.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import repeat

from kazoo.client import KazooClient
from kazoo.exceptions import RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import Create, Delete, GetChildren, GetData
from kazoo.security import OPEN_ACL_UNSAFE

#: A read: ``GetChildren(path, None)`` answers the children list, ``GetData(path, None)`` the
#: ``(data, stat)`` pair; a per-node failure answers its exception instance (``NoNodeError``...).
ReadOp = GetChildren | GetData
#: A write of a multi: answered by the created path, ``True``, or the exception instance.
WriteOp = Create | Delete

#: Operations per multiRead request (keeps each request far below jute.maxbuffer).
MULTI_READ_OPS = 1000
#: Bytes of operations per write ``multi``. Far below jute.maxbuffer (1 MB, where ZooKeeper
#: refuses a request) because every server keeps its last 500 transactions in memory
#: (``zookeeper.commitLogCount``, for syncing followers), at ~5x their bytes: with 512 KB multis a
#: few 10,000-partition reads filled a 256 MB server's heap (OutOfMemoryError) and would hold
#: ~1.2 GB on any server. 32 KB bounds it to ~100 MB (measured: a 256 MB server plateaus at
#: 96 MB over 30 such reads; 161 MB with 64 KB multis) and spares that server's garbage
#: collector: its CPU per 10,000-partition lock + unlock fell from ~330 to ~250 ms. A wide set's
#: multis are pipelined (``commit_batches``), so the extra multis cost no round trips.
MULTI_BYTES = 32 * 1024
#: The ACL our ``Create`` operations carry until sent (the client's own replaces it if it has
#: one): kazoo's open ACL as a tuple, so that an operation holds only immutable atoms and Python's
#: GC stops tracking it at its first look instead of carrying 20,000 of a wide set into its
#: older generations (and full collections) while the multi is under way.
OPEN_ACL = tuple(OPEN_ACL_UNSAFE)
#: ``Create`` flags.
EPHEMERAL = 1
SEQUENCE = 2


def children_of(path: str) -> GetChildren:
    return GetChildren(path, None)


def data_of(path: str) -> GetData:
    return GetData(path, None)


def node_data(result: object) -> bytes | None:
    """The bytes a ``GetData`` read answered (``b""`` for a node without data), or None if it
    failed (the node is gone...)."""
    return (result[0] or b"") if isinstance(result, tuple) else None


def create(path: str, data: bytes = b"", *, ephemeral: bool = False, sequence: bool = False):
    """A ``Create`` of the multi (the client's ACL is filled in when it is sent)."""
    flags = (EPHEMERAL if ephemeral else 0) | (SEQUENCE if sequence else 0)
    return Create(path, data, OPEN_ACL, flags)


def delete(path: str) -> Delete:
    return Delete(path, -1)


def op_bytes(op: WriteOp) -> int:
    """About what ``op`` weighs in a multi request."""
    return 64 + len(op.path) + (len(op.data) if type(op) is Create else 0)


def weighed_batches(ops: Sequence[WriteOp]) -> Iterator[tuple[slice, int]]:
    """Consecutive slices of ``ops`` of at most MULTI_BYTES each (one multi each), and what each
    weighs (``op_bytes`` summed: the multi need not weigh it again)."""
    start = size = 0
    for k, op in enumerate(ops):
        cost = 64 + len(op.path) + (len(op.data) if type(op) is Create else 0)  # op_bytes
        if k > start and size + cost > MULTI_BYTES:
            yield slice(start, k), size
            start, size = k, 0
        size += cost
    if start < len(ops):
        yield slice(start, len(ops)), size


def multi_failure(results: Sequence) -> BaseException | None:
    """The operation error that failed a multi (others report RolledBack/RuntimeInconsistency)."""
    if not any(map(isinstance, results, repeat(BaseException))):  # (thousands, looked at in C)
        return None
    errors = [r for r in results if isinstance(r, BaseException)]
    for r in errors:
        if not isinstance(r, (RolledBackError, RuntimeInconsistency)):
            return r
    return errors[0] if errors else None


def reads_as_sent(chroot: str, ops: Sequence[ReadOp]) -> Sequence[ReadOp]:
    """Reads with the client's chroot added (kazoo's ``_call`` sends paths as given); ``ops``
    themselves without a chroot (the common case, not copied)."""
    if not chroot:
        return ops
    return [type(op)((chroot + op.path).rstrip("/") or "/", None) for op in ops]


def writes_as_sent(client: KazooClient, ops: Sequence[WriteOp]) -> Sequence[WriteOp] | None:
    """Writes with the client's chroot and ACL, or None when ``ops`` go as built (no chroot, the
    open ACL: the common case, not copied)."""
    chroot = client.chroot or ""
    acl = client.default_acl or OPEN_ACL_UNSAFE
    if not chroot and acl is OPEN_ACL_UNSAFE:
        return None
    return [
        Create(chroot + op.path, op.data, acl, op.flags)
        if type(op) is Create
        else Delete(chroot + op.path, op.version)
        for op in ops
    ]
