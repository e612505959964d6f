"""WAITING rows of ``retry`` requests: ephemeral markers beside the lock tree, never in it.

A request under the ``retry`` policy (Hive's) has no lock node while it sleeps between
attempts. So that SHOW LOCKS in any driver lists it, it keeps one ephemeral marker
``/<namespace>/_sparklock-waiting/WAIT-<uuid>`` while it sleeps: outside every object node (a
grant check lists only its object's children), and named so that Hive's ZooKeeperHiveLockManager
never counts it as a lock (Hive takes any node whose path ends in ``-SHARED-<n>`` or
``-EXCLUSIVE-<n>`` for one; this one does not). Its data is the request's lock data plus the
object (``o=``, escaped znode components), the mode (``m=``) and what refused it (``b=``).

Made on the first refusal (never on an uncontended grant), updated when what refuses it changes,
deleted on grant, refusal and cancellation, and gone with the ZooKeeper session of a dead driver.
Best effort: a marker that cannot be written leaves the request waiting, unlisted.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError, NotEmptyError
from kazoo.handlers.threading import KazooTimeoutError

from ....errors import InvalidObjectError, SparkLockError
from ....locks.model import LockData, LockInfo, LockMode, LockState, split_extra_fields
from ....locks.objects import LockObject
from ....locks.waiting import BLOCKER_SEPARATOR
from ..layout import WAITING_CONTAINER, object_from_components
from ..wire.ops import children_of, data_of, node_data
from ..wire.transport import Transport

log = logging.getLogger("sparklock.zookeeper")

MARKER_PREFIX = "WAIT-"
_OBJECT, _MODE, _BLOCKED = "o", "m", "b"
#: A marker is written best effort: it never holds a waiting request up longer than this.
MARKER_TIMEOUT = 2.0


@dataclass
class Shown:
    """One request's marker: its path, the session it lives in, what it says."""

    path: str
    generation: int
    payload: bytes


def encode(row: LockInfo) -> bytes:
    """The marker data of a WAITING row (``:`` cannot occur inside a field)."""
    components = "/".join(c.replace(":", "%3A") for c in row.obj.components)
    blocked = BLOCKER_SEPARATOR.join(b.replace(":", "") for b in row.blocked_by)
    extra = f":{_OBJECT}={components}:{_MODE}={row.mode.value}:{_BLOCKED}={blocked}"
    return row.data.encode() + extra.encode("utf-8")


def decode(path: str, data: bytes) -> LockInfo | None:
    """The WAITING row a marker stands for; None for data that names no object."""
    parts = data.decode("utf-8", "replace").split(":")
    extras = split_extra_fields(parts)
    try:
        obj = object_from_components(extras.get(_OBJECT, "").split("/"))
        mode = LockMode(extras.get(_MODE, ""))
    except (InvalidObjectError, ValueError):
        return None
    blocked = extras.get(_BLOCKED, "")
    return LockInfo(
        obj,
        mode,
        LockData.decode(data),
        path,
        None,
        LockState.WAITING,
        tuple(blocked.split(BLOCKER_SEPARATOR)) if blocked else (),
    )


class WaitMarkers:
    """Shows, updates, hides and lists the markers of one namespace."""

    def __init__(self, transport: Transport, root: str) -> None:
        self.transport = transport
        self.container = f"{root.rstrip('/')}/{WAITING_CONTAINER}"

    def show(self, shown: Shown | None, row: LockInfo) -> Shown | None:
        """Create the marker of ``row`` (or update the one ``shown``); None if it failed."""
        payload = encode(row)
        generation = self.transport.shared.generation
        if shown is not None and shown.generation == generation and shown.payload == payload:
            return shown
        try:
            if shown is not None and shown.generation == generation:
                try:
                    self._call(lambda: self.transport.client().set(shown.path, payload))
                    return Shown(shown.path, generation, payload)
                except NoNodeError:
                    pass  # gone (its session was replaced meanwhile): make a new one
            path = f"{self.container}/{MARKER_PREFIX}{uuid.uuid4().hex}"
            self._call(lambda: self._create(path, payload))
            return Shown(path, generation, payload)
        except (SparkLockError, KazooException, KazooTimeoutError) as exc:
            log.debug("sparklock: could not show a waiting request (%r)", exc)
            return shown

    def _create(self, path: str, payload: bytes) -> None:
        try:
            self.transport.client().create(path, payload, ephemeral=True, makepath=True)
        except NodeExistsError:
            pass  # a retried create whose first try went through (the name is ours alone)

    def hide(self, shown: Shown) -> None:
        """Delete the marker (already gone with an old session: nothing to do)."""
        if shown.generation != self.transport.shared.generation:
            return
        try:
            self._call(lambda: self.transport.client().delete(shown.path))
        except NoNodeError:
            pass
        except (SparkLockError, KazooException, KazooTimeoutError) as exc:
            # It goes with the session at the latest; it names a request that has ended.
            log.warning("sparklock: could not remove waiting marker %s (%r)", shown.path, exc)
            return
        try:  # the last one out leaves no container behind (as Hive deletes empty objects)
            self.transport.client().delete(self.container)
        except (NotEmptyError, NoNodeError):
            pass
        except (SparkLockError, KazooException, KazooTimeoutError) as exc:
            log.debug("sparklock: could not remove %s (%r)", self.container, exc)

    def _call(self, fn) -> None:
        self.transport.retrying(fn, "showing a waiting request", MARKER_TIMEOUT)

    def listed(self, obj: LockObject | None, descendants: bool) -> Iterator[LockInfo]:
        """The WAITING rows of the markers on ``obj`` (and below it), all when None."""
        (names,) = self.transport.read([children_of(self.container)], "listing waiting requests")
        if not isinstance(names, list):
            return  # no container: nobody ever waited under the retry policy
        paths = [f"{self.container}/{n}" for n in names if n.startswith(MARKER_PREFIX)]
        datas = self.transport.read([data_of(p) for p in paths], "listing waiting requests")
        for path, got in zip(paths, datas, strict=True):
            data = node_data(got)
            if data is None:
                continue  # hidden meanwhile
            row = decode(path, data)
            if row is None:
                continue
            if obj is None or row.obj == obj or (descendants and obj.is_ancestor_of(row.obj)):
                yield row
