"""ZooKeeper's ``setWatches`` request: many data watches in one request, each set only on the
node the client saw last.

Clients send it after reconnecting, to carry their watches over to the new connection; the
server takes it at any time. For every path it answers at once with an event when the node is
gone (``NodeDeleted``) or was changed after ``relative_zxid`` (``NodeDataChanged``), and sets the
watch otherwise: given the zxid a node was created at, one request watches any number of nodes
exactly as a read with a watch of each would (the node is the one created then, or an event
says otherwise). kazoo has no form of the request, so :func:`set_watches` also puts the watchers
in kazoo's table itself, before sending (the events come before the answer).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping

from kazoo.client import KazooClient
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.serialization import int_struct, long_struct, write_string
from kazoo.protocol.states import WatchedEvent

_NONE = int_struct.pack(0)  # an empty list (no exists or child watches)


class SetWatches(namedtuple("SetWatches", "relative_zxid data_watches")):
    """``setWatches`` (opcode 101) with data watches only; its answer has no body."""

    type = 101

    def serialize(self) -> bytes:
        parts = [long_struct.pack(self.relative_zxid), int_struct.pack(len(self.data_watches))]
        parts += [write_string(path) for path in self.data_watches]
        return b"".join([*parts, _NONE, _NONE])

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> None:
        return None


def set_watches(
    client: KazooClient,
    relative_zxid: int,
    watchers: Mapping[str, Callable[[WatchedEvent], None]],
) -> IAsyncResult:
    """Watch each path of ``watchers`` (namespace paths: the client's chroot is added) from
    ``relative_zxid`` on; the answer to come (None, or the request's failure)."""
    chroot = client.chroot or ""
    table = client._data_watchers
    for path, watcher in watchers.items():
        table[chroot + path].add(watcher)
    answer = client.handler.async_result()
    client._call(SetWatches(relative_zxid, [chroot + p for p in watchers]), answer)
    return answer
