"""Which implicit lock sets are alive, and in which ZooKeeper session they were taken.

A statement's (implicit) locks are ephemeral nodes: they go with the session that made them.
When the shared client reports a session lost, every set taken in that session (or before) has
lost its locks; a release must then not delete paths that may already name someone else's new
locks. Explicit (``LOCK TABLE``) sets are persistent nodes and are not tracked here.
"""

from __future__ import annotations

import threading

from ..base import HeldLocks


class LiveSets:
    """The implicit sets a manager holds, keyed by the identity of their ``HeldLocks``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[int, tuple[HeldLocks, int]] = {}

    def __bool__(self) -> bool:
        return bool(self._sets)

    def add(self, held: HeldLocks, generation: int, current: int) -> bool:
        """Track ``held``, taken in session ``generation``; False (not tracked) when the session
        is already another (``current``): its nodes are gone."""
        with self._lock:
            if current != generation:
                return False
            self._sets[id(held)] = (held, generation)
            return True

    def contains(self, held: HeldLocks) -> bool:
        """Whether ``held`` is tracked: granted, and neither released nor lost yet."""
        with self._lock:
            return id(held) in self._sets

    def pop(self, held: HeldLocks) -> int | None:
        """Stop tracking ``held``; the generation it was taken in (None: not tracked)."""
        with self._lock:
            entry = self._sets.pop(id(held), None)
        return None if entry is None else entry[1]

    def put_back(self, held: HeldLocks, generation: int, current: int) -> bool:
        """Track ``held`` again after a failed release; False when its session is gone meanwhile
        (it was out of the table, so no session-loss notice reached it)."""
        return self.add(held, generation, current)

    def lost(self, generation: int | None = None) -> list[HeldLocks]:
        """Stop tracking and return the sets of sessions up to ``generation`` (None: all)."""
        with self._lock:
            keys = [k for k, (_, g) in self._sets.items() if generation is None or g <= generation]
            return [self._sets.pop(k)[0] for k in keys]
