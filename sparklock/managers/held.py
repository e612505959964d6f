"""What an acquisition hands back: the locks it holds (:class:`HeldLocks`, released through the
manager that made them, marked lost when the manager finds them gone), or why it was refused
(:class:`Refusal`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .. import telemetry
from ..errors import LocksLostError
from ..locks.model import LockInfo, LockMode, LockRequest, LockType
from ..locks.objects import LockObject

log = logging.getLogger("sparklock")


class Releaser(Protocol):
    """The manager a set was taken from (``LockManager``)."""

    def release(self, held: HeldLocks) -> None: ...


@dataclass
class Refusal:
    """Why an attempt failed: the first object refused, in the requested mode, and its holders."""

    request: LockRequest
    holders: list[LockInfo]


@dataclass
class HeldLocks:
    """The locks one acquisition holds (a statement's implicit set, or one LOCK TABLE)."""

    owner: str
    query_id: str
    lock_type: LockType
    locks: Sequence[LockInfo]  # a list, or a manager's sequence that makes them when read
    manager: Releaser | None = field(default=None, repr=False)
    lost_reason: str | None = None
    released: bool = False
    acquired_at: float = field(default_factory=time.monotonic)
    #: How long asking for these locks took until the grant (set by the service; metrics).
    waited_ns: int = 0
    # Manager-private: what the manager needs to release these locks (entries, znode paths).
    handles: list = field(default_factory=list, repr=False)
    #: The objects held EXCLUSIVE, when the manager noted them while taking the set (None: read
    #: them from ``locks``); see :meth:`exclusive_objects`.
    exclusive: list[LockObject] | None = field(default=None, repr=False)
    #: The lease the set was granted under (a ZooKeeper session id, a metastore term), noted
    #: by the manager at the grant: the JVM binds the statement to it, never to a later one.
    lease_epoch: int | None = None
    _lost_callbacks: list[Callable[[HeldLocks], None]] = field(default_factory=list, repr=False)

    @property
    def lost(self) -> bool:
        return self.lost_reason is not None

    def check(self) -> None:
        """Raise :class:`LocksLostError` if the locks are gone (fencing before/after work)."""
        if self.lost_reason is not None:
            names = ", ".join(sorted({i.name for i in self.locks})) or "-"
            raise LocksLostError(
                f"query {self.query_id} lost its locks ({self.lost_reason}); locks were: {names}"
            )

    def exclusive_objects(self) -> list[LockObject]:
        """The objects held EXCLUSIVE: what the release counts as written (``service.epochs``),
        without reading every lock of a wide shared set."""
        if self.exclusive is not None:
            return self.exclusive
        x = LockMode.EXCLUSIVE
        return [i.obj for i in self.locks if i.mode is x]

    def on_lost(self, callback: Callable[[HeldLocks], None]) -> None:
        """Call ``callback`` (once) when the manager finds these locks gone."""
        fire = False
        with _callback_lock:
            if self.lost_reason is not None:
                fire = True
            else:
                self._lost_callbacks.append(callback)
        if fire:
            callback(self)

    def mark_lost(self, reason: str) -> None:
        with _callback_lock:
            if self.lost_reason is not None or self.released:
                return
            self.lost_reason = reason
            callbacks, self._lost_callbacks = self._lost_callbacks, []
        log.error("sparklock: query %s lost its locks: %s", self.query_id, reason)
        telemetry.emit(telemetry.LOCKS_LOST, len(self.locks), self.query_id)
        for cb in callbacks:
            try:
                cb(self)
            except Exception:  # a callback must not stop the others
                log.exception("sparklock: lost-locks callback failed")

    def release(self) -> None:
        if self.manager is not None:
            self.manager.release(self)


_callback_lock = threading.Lock()
