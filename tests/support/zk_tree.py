"""Reading a ZooKeeper tree in tests: a client of its own, every znode below a root or only the
lock nodes.

Nodes may come and go while the tree is read (locks released and cleaned up meanwhile): one
that vanished between listing and reading is simply not part of the answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import ZnodeStat

LOCK_PREFIX = "LOCK-"


@contextlib.contextmanager
def inspecting(address: str, timeout: float = 10.0) -> Iterator[KazooClient]:
    """A plain kazoo client on ``address`` to look at the tree with (closed on exit): a
    connection of its own, apart from the ones the managers under test use."""
    client = KazooClient(hosts=address)
    client.start(timeout)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def is_lock(path: str) -> bool:
    """Whether ``path`` names a lock node (``LOCK-<MODE>-<sequence>``)."""
    return path.rsplit("/", 1)[-1].startswith(LOCK_PREFIX)


def znodes(
    client: KazooClient, root: str, *, locks_only: bool = False
) -> dict[str, tuple[bytes, ZnodeStat]]:
    """Every znode below ``root`` (not ``root`` itself): absolute path -> (data, stat).

    Parents come before their children, siblings in name order. ``locks_only``: just the lock
    nodes (other nodes are walked, not read). A missing root is an empty tree."""
    out: dict[str, tuple[bytes, ZnodeStat]] = {}

    def walk(path: str) -> None:
        try:
            children = sorted(client.get_children(path))
        except NoNodeError:
            return
        for child in children:
            full = f"{path}/{child}"
            if is_lock(full) or not locks_only:
                try:
                    out[full] = client.get(full)
                except NoNodeError:
                    continue
            if not is_lock(full):  # lock nodes are ephemeral: no children
                walk(full)

    walk(root)
    return out


def relative(path: str, root: str) -> str:
    """``path`` below ``root``, without the leading slash."""
    return path[len(root) + 1 :]
