"""Owners alive or gone with the metastore manager, from the metastore's own heartbeats, on a real
Hive 4 metastore: a lock whose owner keeps heartbeating is alive, one whose heartbeats stopped
longer than the lock timeout ago is gone, and ``python -m sparklock stale --apply`` removes only
that one. Each manager here has its own connections and its own record of its requests, as a
driver process has.

The metastore's housekeeper removes a gone owner's locks by itself a moment after its timeout
(every second here, ``metastore.txn.timeout`` 10 s); the reading side is told a 3 s timeout
(``spark.sparklock.metastore.txnTimeout``) so that the gone owner is seen before that.
"""

from __future__ import annotations

import io
import time

import pytest

from sparklock.cli import main
from sparklock.locks.model import LockMode, LockType
from sparklock.locks.objects import LockObject
from tests.support.locks import take, wait_for

pytestmark = pytest.mark.metastore

LIVE_T = LockObject.of_table("owners", "live_t")
HUNG_T = LockObject.of_table("owners", "hung_t")
READER_TIMEOUT = 3.0


def _cli(uri: str, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    conf = [
        "spark.sparklock.manager=metastore",
        f"spark.sparklock.metastore.uris={uri}",
        f"spark.sparklock.metastore.txnTimeout={READER_TIMEOUT:.0f}s",
    ]
    code = main([*args, *(a for c in conf for a in ("--conf", c))], out=out)
    return code, out.getvalue()


def test_alive_follows_the_heartbeat_and_stale_removes_only_the_gone_owner(hive_metastore):
    from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings

    uri = hive_metastore.uri
    live = MetastoreLockManager(MetastoreSettings(uris=uri, heartbeat_interval=0.5))
    hung = MetastoreLockManager(MetastoreSettings(uris=uri))
    reader = MetastoreLockManager(MetastoreSettings(uris=uri, txn_timeout=READER_TIMEOUT))
    try:
        mine = take(live, LIVE_T, LockMode.EXCLUSIVE, "live-s", "lq", lock_type=LockType.EXPLICIT)
        take(hung, HUNG_T, LockMode.EXCLUSIVE, "hung-s", "hq", lock_type=LockType.EXPLICIT)
        hung.heartbeats.close()  # its owner stops heartbeating (a hung or killed driver)
        stopped = time.monotonic()
        infos = reader.list_locks(LockObject.of_database("owners"))
        assert [(i.name, i.data.lock_type, i.data.owner) for i in infos] == [
            ("owners@hung_t", LockType.EXPLICIT, "hung-s"),
            ("owners@live_t", LockType.EXPLICIT, "live-s"),
        ]  # another process's request: type and owner from its agent info
        assert reader.owners_alive(infos) == [True, True]
        assert live.owners_alive(live.list_locks(LIVE_T)) == [True]  # its own: alive
        code, out = _cli(uri, "stale")
        assert code == 0 and "0 stale explicit lock(s)" in out

        assert wait_for(lambda: reader.owners_alive(infos) == [False, True], 8, 0.2)
        gone_after = time.monotonic() - stopped
        code, out = _cli(uri, "stale")
        assert "stale explicit lock: owners@hung_t EXCLUSIVE" in out and "owner=gone" in out
        assert "live_t" not in out
        code, out = _cli(uri, "stale", "--apply")
        assert code == 0 and "removed 1 stale explicit lock(s)" in out, out
        assert [i.name for i in reader.list_locks(LockObject.of_database("owners"))] == [
            "owners@live_t"
        ]
        assert gone_after < 10  # seen before the metastore's own 10 s timeout expired it
        mine.release()
    finally:
        for m in (live, hung, reader):
            m.close()
