"""Names across the metastore boundary for a session whose catalogs include the metastore's own
tables (an Iceberg ``HiveCatalog`` on it, :mod:`.catalogs`): what is sent is the metastore's
object (``db@t``), what SHOW LOCKS and errors show is the name the statement or user wrote
(``ice.db.t``) wherever this process knows it (:mod:`.mapping`, ``hive_object`` / ``as_named``).
Without such a catalog every name passes through unchanged."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ...locks.model import LockData, LockInfo, LockMode, LockRequest
from ...locks.objects import LockObject
from . import mapping


@dataclasses.dataclass(frozen=True)
class Names:
    """The catalogs (lower-cased names) whose objects are the metastore's own."""

    catalogs: frozenset[str] = frozenset()

    def hive(self, obj: LockObject) -> LockObject:
        """``obj`` as the metastore keeps it."""
        return mapping.hive_object(obj, self.catalogs) if self.catalogs else obj

    def covered(self, request: LockRequest, obj: LockObject, mode: LockMode) -> bool:
        """:func:`mapping.covered` of ``request`` by an own lock on ``obj``, both as the
        metastore keeps them (a LOCK TABLE of ``db.t`` covers a write to ``ice.db.t``)."""
        hive = LockRequest(self.hive(request.obj), request.mode)
        return mapping.covered(hive, [(self.hive(obj), mode)])

    def listed(self, obj: LockObject, asked: LockObject, descendants: bool) -> bool:
        """Whether a lock on ``obj`` belongs in a listing of ``asked`` (and, with
        ``descendants``, of what is below it): by their names or as the metastore keeps them."""
        if obj == asked or (descendants and asked.is_ancestor_of(obj)):
            return True
        kept, wanted = self.hive(obj), self.hive(asked)
        return kept == wanted or (descendants and wanted.is_ancestor_of(kept))

    def meets(self, request: LockRequest, held: LockInfo) -> bool:
        """:func:`mapping.conflicts` of ``request`` with a held lock, as the metastore sees
        both (their names may differ: ``ice.db.t`` and ``db@t`` are one table)."""
        return mapping.conflicts(
            LockRequest(self.hive(request.obj), request.mode), self.hive(held.obj), held.mode
        )

    def refused_request(
        self, lock_set: Sequence[LockRequest], holders: Sequence[LockInfo]
    ) -> LockRequest:
        """:func:`mapping.refused_request` decided as the metastore sees the objects, answered
        as the statement named its request."""
        sent = [LockRequest(self.hive(r.obj), r.mode) for r in lock_set]
        seen = [dataclasses.replace(h, obj=self.hive(h.obj)) for h in holders]
        chosen = mapping.refused_request(sent, seen)
        return next((r for r, q in zip(lock_set, sent, strict=True) if q is chosen), lock_set[0])

    def infos(
        self,
        rows: Sequence,
        known: Mapping[int, tuple[LockData, str]],
        asked: Mapping[int, Sequence[LockObject]],
        like: Sequence[LockObject] = (),
    ) -> list[LockInfo]:
        """SHOW LOCKS rows as sparklock lists them: a row of a request this process made
        (``asked``: its request id → the objects it asked for) named as that request named it,
        any other as ``like`` names it (the objects a listing or a refused request is about)."""
        infos = [mapping.row_info(row, known) for row in rows]
        if not self.catalogs:
            return infos
        out = []
        for row, info in zip(rows, infos, strict=True):
            named = [o for o in (*asked.get(row.lockid, ()), *like) if o.namespace]
            obj = mapping.as_named(info.obj, named, self.catalogs)
            out.append(info if obj == info.obj else dataclasses.replace(info, obj=obj))
        return out
