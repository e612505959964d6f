"""Cancellable lock waits: the registry of acquisitions in progress and what ends them.

Every acquisition waits with a cancel ``Event`` registered under its session, job group and job
tags; :meth:`WaitRegistry.cancel` ends the matching ones (Spark's ``cancelJobGroup`` and friends,
see ``sparklock.spark.callback``) and the wait fails with ``LOCK_WAIT_CANCELLED``, holding nothing.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import SparkLockError
from ..managers import AcquisitionCancelled

log = logging.getLogger("sparklock")


class WaitCancelledError(AcquisitionCancelled):
    """A statement's lock wait was ended by a Spark cancellation; nothing of it is held."""

    def __init__(self, object_name: str, reason: str) -> None:
        SparkLockError.__init__(
            self, f"{self.code}: cancelled by {reason} while waiting for a lock on {object_name}"
        )


@dataclass
class _Wait:
    """One acquisition in progress, and what a cancellation must match to end it."""

    session: str
    group: str | None
    tags: frozenset[str]
    event: threading.Event = field(default_factory=threading.Event)
    reason: str = ""


class WaitRegistry:
    """The lock waits in progress, so that a Spark cancellation can find and end them."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._waits: dict[int, _Wait] = {}

    @contextlib.contextmanager
    def cancellable(self, session: str, scope: Mapping[str, Any]) -> Iterator[threading.Event]:
        """A wait that :meth:`cancel` can end: yields the manager's cancel event and turns
        the manager's cancellation into ``LOCK_WAIT_CANCELLED`` naming what cancelled it.

        ``scope`` carries the ``jobGroup`` / ``jobTags`` of the waiting thread (facts, or a LOCK
        TABLE request)."""
        wait = _Wait(
            session,
            scope.get("jobGroup") or None,
            frozenset(str(t) for t in scope.get("jobTags") or ()),
        )
        with self._guard:
            self._waits[id(wait)] = wait
        try:
            yield wait.event
        except AcquisitionCancelled as e:
            name = str(e).rsplit(" lock on ", 1)[-1]
            raise WaitCancelledError(name, wait.reason or "a cancellation") from None
        finally:
            with self._guard:
                self._waits.pop(id(wait), None)

    def cancel(
        self,
        *,
        session: str | None = None,
        group: str | None = None,
        tag: str | None = None,
        reason: str = "sparklock.cancel_waits()",
    ) -> int:
        """End the waits that match every given filter (none given: all); returns how many."""
        with self._guard:
            waits = list(self._waits.values())
        count = 0
        for w in waits:
            if session is not None and w.session != session:
                continue
            if group is not None and w.group != group:
                continue
            if tag is not None and tag not in w.tags:
                continue
            if not w.event.is_set():
                w.reason = reason
                w.event.set()
                count += 1
        if count:
            log.info("sparklock: %s ended %d lock wait(s)", reason, count)
        return count

    def __len__(self) -> int:
        with self._guard:
            return len(self._waits)
