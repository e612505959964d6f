"""What this process knows about the lock tree without reading it (step 1 of a lock set).

Only ever a guess that the create multi verifies (a wrong one costs the multi, then the read):
the namespace root exists once a create succeeded; object nodes we deleted stay absent until
seen again; a node with a lock of ours below it exists. Nodes are named by their znode paths.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from ..wire.owners import OwnerRegistry

#: Object nodes remembered as deleted by us (so the next lock set can create them unread).
ABSENT_HINTS = 1024

#: Path components below ``/`` (the namespace root's included) of an object node.
Parts = tuple[str, ...]


def needed_nodes(objects: Iterable[str]) -> set[str]:
    """The object node paths ``objects`` and every ancestor of them (the namespace root and
    what is above it included): what must exist before their locks can be created."""
    needed: set[str] = set()
    add = needed.add
    for path in objects:
        while path and path not in needed:  # its ancestors are in already otherwise
            add(path)
            path = path.rpartition("/")[0]
    return needed


class TreeHints:
    """The guesses (see the module), shared by the creates and the releases of one manager."""

    def __init__(self, root_parts: Parts, owners: OwnerRegistry) -> None:
        self.root_parts = root_parts
        #: the namespace root's path, and what an object path starts with
        self.root_path = "/" + "/".join(root_parts)
        self.prefix = self.root_path.rstrip("/") + "/"
        self.owners = owners
        self.root_known = False
        self.absent: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def known_existing(self, needed: Iterable[str]) -> set[str] | None:
        """Which of ``needed`` (paths) exist, if this process knows for every one; else None."""
        existing: set[str] = set()
        root = self.root_path
        local = self.owners.local_count
        with self._lock:
            if not self.absent and not self.root_known:
                return None
            absent = self.absent
            gone: dict[str, bool] = {}  # path -> it or an ancestor below the root is absent

            def is_gone(path: str) -> bool:
                known = gone.get(path)
                if known is None:
                    if path in absent:
                        known = True
                    elif len(path) <= len(root):
                        known = False  # the root, or above it: never hinted absent
                    else:
                        known = is_gone(path.rpartition("/")[0])
                    gone[path] = known
                return known

            for path in needed:
                if path == root:
                    if not self.root_known:
                        return None
                    existing.add(path)
                elif local(path) > 0:
                    existing.add(path)  # a lock of ours below it: it exists
                elif not is_gone(path):
                    return None
        return existing

    def note_created(self, involved: set[str]) -> None:
        """A create multi succeeded: the root and every node it involved exist now."""
        with self._lock:
            self.root_known = True
            for hint in [h for h in self.absent if h in involved]:
                del self.absent[hint]

    def note_absent(self, deleted: Iterable[str]) -> None:
        """Remember object nodes we deleted (the topmost ones: their subtrees went with them)."""
        deleted = set(deleted)
        tops = [p for p in deleted if p.rpartition("/")[0] not in deleted]
        if not tops:
            return
        with self._lock:
            for p in tops:
                self.absent[p] = None
                self.absent.move_to_end(p)
            while len(self.absent) > ABSENT_HINTS:
                self.absent.popitem(last=False)

    def forget_absent(self) -> None:
        """A guess failed: read the tree next time."""
        with self._lock:
            self.absent.clear()
