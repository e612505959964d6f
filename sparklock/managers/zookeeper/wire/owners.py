"""Which lock znodes this process created, for whom, and which object nodes it is using.

One registry per quorum, shared by every manager of the process: the grant rule ignores an
owner's own explicit locks, and a release keeps object nodes another thread is about to use.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from ....locks.model import LockType
from ..layout import counts_below


class OwnerRegistry:
    """``znode path -> (owner, lock type)`` of the lock nodes this process created.

    It also counts, per object node, this process's lock nodes at or below it (``local_count``):
    a node with a lock of ours below it exists and is not empty, which lets the manager skip
    reading the tree where it already knows the answer. And it counts the acquisitions under
    way that will use a node (``hold``): a release must not delete a node another thread of
    this process is about to create a lock under (``local_busy``), or the threads of one
    process would delete and re-create their shared database node against each other.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[str, LockType]] = {}
        self._below: dict[str, int] = {}  # object path -> our lock nodes at or below it
        self._held: dict[str, int] = {}  # object path -> acquisitions under way that use it

    def add(self, paths: Iterable[str], owner: str, lock_type: LockType) -> None:
        # counted outside the lock; the lock only merges (a path already known counts once)
        entries = dict.fromkeys(paths, (owner, lock_type))
        counts = counts_below(entries)
        with self._lock:
            known = entries.keys() & self._entries.keys()
            if known:
                counts = counts_below(p for p in entries if p not in known)
            self._entries.update(entries)
            below = self._below
            for obj, n in counts.items():
                below[obj] = below.get(obj, 0) + n

    def forget(self, paths: Iterable[str], counts: dict[str, int] | None = None) -> set[str]:
        """Forget lock nodes; returns the object nodes no lock or acquisition of this process
        uses any more because of it. ``counts``: ``counts_below(paths)`` if the caller has it
        (used when every one of ``paths`` was known)."""
        unused: set[str] = set()
        paths = paths if isinstance(paths, (list, tuple)) else list(paths)
        with self._lock:
            pop = self._entries.pop
            gone = [p for p in paths if pop(p, None) is not None]
            if counts is None or len(gone) != len(paths):
                counts = counts_below(gone)
            below, held = self._below, self._held
            for obj, n in counts.items():
                left = below[obj] - n
                if left:
                    below[obj] = left
                else:
                    del below[obj]
                    if obj not in held:
                        unused.add(obj)
        return unused

    def local_count(self, object_path: str) -> int:
        """This process's registered lock nodes at or below ``object_path``."""
        return self._below.get(object_path, 0)

    def local_busy(self, object_path: str) -> int:
        """``local_count`` plus the acquisitions under way that use ``object_path``."""
        return self._below.get(object_path, 0) + self._held.get(object_path, 0)

    def used_beyond(self, object_paths: Iterable[str], mine: dict[str, int]) -> list[str]:
        """Of ``object_paths``, those this process uses beyond ``mine`` (lock nodes at or below
        each, typically the ones being deleted): ``local_busy`` above it, in one pass."""
        below, held = self._below, self._held
        return [p for p in object_paths if below.get(p, 0) + held.get(p, 0) > mine.get(p, 0)]

    def held_count(self, object_path: str) -> int:
        """Acquisitions under way (``hold``) that use ``object_path``."""
        return self._held.get(object_path, 0)

    def hold(self, object_paths: Iterable[str]) -> None:
        with self._lock:
            for p in object_paths:
                self._held[p] = self._held.get(p, 0) + 1

    def unhold(self, object_paths: Iterable[str]) -> None:
        with self._lock:
            for p in object_paths:
                left = self._held[p] - 1
                if left:
                    self._held[p] = left
                else:
                    del self._held[p]

    def owner_of(self, path: str) -> str | None:
        entry = self._entries.get(path)
        return entry[0] if entry else None

    def is_own_explicit(self, path: str, owner: str) -> bool:
        entry = self._entries.get(path)
        return entry is not None and entry[0] == owner and entry[1] is LockType.EXPLICIT

    def __len__(self) -> int:
        return len(self._entries)
