"""Write epochs: what lets the JVM re-list only the files a writer may have changed.

Spark lists a table's files while it plans (or reuses a listing cached long before), before any
lock exists; a writer that committed in between has replaced files the listing names. Instead of
listing every file read again after every grant, the JVM keeps, per listing, the epochs of what it
lists taken at the grant under which it listed them (``jvm-shim/.../ListingLedger.java``), and
re-lists only what a writer may have changed since: what has a different epoch now.

An epoch must change whenever a writer may have committed to the object, and only needs to
change then (otherwise it just costs a listing):

* **Writers in this process** -- any manager: every release of an EXCLUSIVE lock counts as a
  write of that object (its own counter) and, for a partition or a facet, of the table below it.
  Counted *before* the manager lets the lock go, so a reader granted afterwards sees the new
  value. A partition's epoch is the sum of the counters of its database, table, prefixes and
  itself; a table's whole epoch adds the writes below it.
* **Writers in other processes** (other drivers, Hive): the answer's ``clock`` is the manager's
  :meth:`~sparklock.managers.base.LockManager.write_clock`. The embedded manager's never moves
  (it has no foreign writers); ZooKeeper's moves when any other client wrote anything to
  ZooKeeper -- every foreign lock comes and goes with writes, Hive's included -- and is None
  (unknown: re-list) when it cannot be read consistently. A moved clock means: re-list every
  listing made under another reading.

The values are only compared for equality, by the JVM, with those of the same clock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from ..locks.model import LockInfo, LockMode
from ..locks.objects import DEFAULT_PARTITION_NAME, LockObject
from ..protocol.messages import ReadEpochs, TableEpochs
from ..rules.facts import Facts, TableRef

Pairs = tuple[tuple[str, str], ...]


class WriteEpochs:
    """Process-wide write counters per lock object (memory: one int per object ever written)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        #: ("db",), ("db", "t") or ("db", "t", pairs) -> EXCLUSIVE releases on exactly it
        self._own: dict[tuple, int] = {}
        #: ("db", "t") -> EXCLUSIVE releases of its partitions and facets
        self._below: dict[tuple[str, str], int] = {}

    def written(self, locks: Iterable[LockInfo]) -> None:
        """A lock set is about to be released: its EXCLUSIVE objects count as written."""
        objects = [i.obj for i in locks if i.mode is LockMode.EXCLUSIVE]
        if objects:
            self.written_objects(objects)

    def written_objects(self, objects: Iterable[LockObject]) -> None:
        with self._guard:
            for obj in objects:
                if obj.table is None:
                    key: tuple = (obj.database,)
                elif obj.facet is not None:
                    self._bump_below(obj.database, obj.table)
                    continue
                elif obj.partition:
                    key = (obj.database, obj.table, obj.partition)
                    self._bump_below(obj.database, obj.table)
                else:
                    key = (obj.database, obj.table)
                self._own[key] = self._own.get(key, 0) + 1

    def _bump_below(self, database: str, table: str) -> None:
        self._below[database, table] = self._below.get((database, table), 0) + 1

    def answer(self, facts: Facts, clock: str | None) -> ReadEpochs:
        """The epochs of every catalog table the statement reads, aligned with ``facts.reads``."""
        current_db = (facts.current_database or "default").lower()
        tables: list[TableEpochs] = []
        with self._guard:
            for index, ref in enumerate(facts.reads):
                if isinstance(ref, TableRef) and ref.table and not ref.is_view:
                    tables.append(self._table(index, ref, current_db))
        return ReadEpochs(clock=clock, tables=tables)

    def _table(self, index: int, ref: TableRef, current_db: str) -> TableEpochs:
        db = (ref.database or current_db).lower()
        table = ref.table.lower()
        base = self._own.get((db,), 0) + self._own.get((db, table), 0)
        below = self._below.get((db, table), 0)
        indexes: list[int] = []
        epochs: list[int] = []
        if below and ref.partitions:  # some partition of it was written: which, if read?
            columns = ref.partition_columns
            for i, spec in enumerate(ref.partitions):
                pairs = _pairs(spec, columns)
                extra = sum(
                    self._own.get((db, table, pairs[:n]), 0) for n in range(1, len(pairs) + 1)
                )
                if extra:
                    indexes.append(i)
                    epochs.append(base + extra)
        return TableEpochs(
            read=index, whole=base + below, base=base, indexes=indexes, epochs=epochs
        )


def _pairs(spec, columns: Iterable[str]) -> Pairs:
    """A spec as ``LockObject.partition`` normalises it (column order, lower-cased names, the
    default partition for null)."""
    order = list(columns) or list(spec)
    return tuple(
        (
            str(c).lower(),
            DEFAULT_PARTITION_NAME if spec.get(c) is None or spec.get(c) == "" else str(spec[c]),
        )
        for c in order
        if c in spec
    )
