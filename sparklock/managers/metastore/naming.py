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
