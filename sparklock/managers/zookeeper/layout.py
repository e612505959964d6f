"""Hive's znode layout: how a lock object and a lock node are named under the namespace.

``/<namespace>/<db>[/<table>[/k1=v1...]]/LOCK-SHARED-0000000007``: object nodes are persistent
and empty, a lock is a sequential child of its object node (identical to Hive 2.3.10).

Objects of other catalogs take one node per level of their scope, each ending with ``.``
(``/<namespace>/ice./a./b./t/k=v/LOCK-...``): no Hive database name has a ``.``, so Hive's
``ZooKeeperHiveLockManager`` never takes such a node for one of its databases or tables, and the
trailing ``.`` tells a scope level from the table below it on the way back.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from ...errors import InvalidObjectError
from ...locks.model import LockMode
from ...locks.objects import (
    FACET_PREFIX,
    SCOPE_END,
    LockObject,
    ObjectKind,
    unescape_path_name,
)

LOCK_PREFIX = "LOCK-"
#: The child of the namespace root holding the markers of waiting ``retry`` requests
#: (:mod:`.waiters`): a name no Hive or Spark database can have (it has a ``-``), never an object.
WAITING_CONTAINER = "_sparklock-waiting"
#: The waits of every waiting sparklock statement, for the deadlock detection across drivers
#: (:mod:`.recipe.wait_graph`): named like WAITING_CONTAINER, for the same reason.
WAITS_CONTAINER = "_sparklock-waits"
#: The presence of every driver (or server session) that holds locks (:mod:`.recipe.presence`).
OWNERS_CONTAINER = "_sparklock-owners"
#: Children of the namespace root that are sparklock's bookkeeping, never lock objects.
SIDE_CONTAINERS = frozenset((WAITING_CONTAINER, WAITS_CONTAINER, OWNERS_CONTAINER))
_LOCK_NAME = re.compile(r"^LOCK-(SHARED|EXCLUSIVE)-(-?\d+)$")

#: How Hive names an object's kind in its "not locked" message.
KIND_WORD = {
    ObjectKind.DATABASE: "Database",
    ObjectKind.TABLE: "Table",
    ObjectKind.PARTITION: "Partition",
    ObjectKind.FACET: "Table",
}


class LockName(NamedTuple):
    """What a lock node's name says: its mode and its sequence number."""

    mode: LockMode
    seq: int


def parse_lock_name(name: str) -> LockName | None:
    """``LOCK-SHARED-0000000005`` -> (SHARED, 5); None for anything that is not a lock node."""
    m = _LOCK_NAME.match(name)
    if not m:
        return None
    return LockName(LockMode(m.group(1)), int(m.group(2)))


def object_path(namespace_root: str, obj: LockObject) -> str:
    """The znode of ``obj`` below ``namespace_root`` (e.g. ``/hive_zookeeper_namespace``)."""
    return "/".join((namespace_root.rstrip("/"), *obj.components))


def object_from_components(components: Sequence[str]) -> LockObject:
    """The object of a znode path below the namespace (components are escaped names).

    Built from the components rather than through ``LockObject.parse`` of a display name, which
    would split a database or table name containing ``@``."""
    if not components:
        raise InvalidObjectError("the namespace root is not a lock object")
    depth = 1
    if components[0].endswith(SCOPE_END):  # a catalog scope: every level ending with "."
        while depth < len(components) and components[depth].endswith(SCOPE_END):
            depth += 1
        database = "".join(components[:depth])  # kept escaped: a scope is its escaped parts
    else:
        database = unescape_path_name(components[0])
    if len(components) == depth:
        return LockObject(database)
    table = unescape_path_name(components[depth])
    rest = components[depth + 1 :]
    if len(rest) == 1 and rest[0].startswith(FACET_PREFIX) and "=" not in rest[0]:
        return LockObject(database, table, facet=unescape_path_name(rest[0][len(FACET_PREFIX) :]))
    spec = []
    for comp in rest:
        if "=" not in comp:
            raise InvalidObjectError(f"znode {comp!r} is not a partition component")
        key, value = comp.split("=", 1)
        spec.append((unescape_path_name(key), unescape_path_name(value)))
    return LockObject(database, table, tuple(spec))


def object_paths(lock_path: str) -> Iterator[str]:
    """The object nodes above a lock node: ``/ns/db/t/LOCK-..`` -> ``/ns/db/t``, ``/ns/db``,
    ``/ns``."""
    path = lock_path
    while True:
        path = path.rpartition("/")[0]
        if not path:
            return
        yield path


def counts_below(lock_paths: Iterable[str]) -> dict[str, int]:
    """Per object node, how many of the lock nodes ``lock_paths`` are at or below it (the
    ancestors ``object_paths`` names).

    Counted a level at a time, each object node's count handed to its parent once, rather than
    walking up from every lock: the 1,000 partitions of a wide set share one table, database
    and namespace node, so this costs about one step per lock instead of one per ancestor."""
    level: dict[str, int] = {}
    get = level.get
    for p in lock_paths:
        obj = p.rpartition("/")[0]
        level[obj] = get(obj, 0) + 1
    counts: dict[str, int] = {}
    while level:
        up: dict[str, int] = {}
        for obj, n in level.items():
            if obj:
                counts[obj] = counts.get(obj, 0) + n
                parent = obj.rpartition("/")[0]
                if parent:
                    up[parent] = up.get(parent, 0) + n
        level = up
    return counts


def deepest_first(paths: Iterable[str]) -> list[str]:
    """Object node paths ordered children before parents (the order they can be deleted in)."""
    return sorted(paths, key=lambda p: (-p.count("/"), p))


_last_lock_time = 0
_lock_time_lock = threading.Lock()


def unique_lock_time() -> int:
    """Epoch millis, strictly increasing in this process: our node data is then unique, which is
    how a create whose reply was lost (ConnectionLoss) finds its nodes again."""
    global _last_lock_time
    with _lock_time_lock:
        now = int(time.time() * 1000)
        _last_lock_time = max(now, _last_lock_time + 1)
        return _last_lock_time
