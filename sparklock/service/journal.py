"""The journal (tests, audits): every grant and release, one JSON line each.

With ``SPARKLOCK_JOURNAL=<dir>`` (or ``LockService.set_journal``) each record carries its
``time.monotonic_ns()`` stamp and the writing process's pid; the stress test checks from the
journals of several drivers that no two conflicting grants ever overlapped.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable

log = logging.getLogger("sparklock")

JournalTarget = str | os.PathLike | Callable[[dict], None] | None


class Journal:
    """Where grant/release records go; off (and free) until a target is set."""

    def __init__(self) -> None:
        self._write: Callable[[dict], None] | None = None
        journal_dir = os.environ.get("SPARKLOCK_JOURNAL")
        if journal_dir:
            self.set_target(journal_dir)

    @property
    def on(self) -> bool:
        return self._write is not None

    def set_target(self, target: JournalTarget) -> None:
        """A callable gets the records, a directory gets ``journal-<pid>.jsonl``; None stops."""
        if target is None or callable(target):
            self._write = target
            return
        os.makedirs(target, exist_ok=True)
        path = os.path.join(os.fspath(target), f"journal-{os.getpid()}.jsonl")
        lock = threading.Lock()

        def write(record: dict) -> None:
            line = json.dumps(record, separators=(",", ":")) + "\n"
            with lock, open(path, "a", encoding="utf-8") as f:
                f.write(line)

        self._write = write

    def record(self, record: dict) -> None:
        """Write one record; a failing journal is logged, never raised to the statement."""
        write = self._write
        if write is None:
            return
        record.setdefault("pid", os.getpid())
        try:
            write(record)
        except Exception:
            log.exception("sparklock: writing the journal failed")
