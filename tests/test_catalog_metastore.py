"""The metastore manager keeps another catalog's objects under a reserved database name, on a
real standalone Hive 4 metastore: they conflict as their hierarchy says, list back by their
names (``jdb.x.t``), and never meet a Hive object of a similar name."""

from __future__ import annotations

import pytest

from sparklock.config import LockSettings
from sparklock.errors import LockConflictError
from sparklock.locks.model import LockMode, WaitPolicy
from sparklock.locks.objects import LockObject
from tests.support.locks import take

pytestmark = pytest.mark.metastore

S, X = LockMode.SHARED, LockMode.EXCLUSIVE
T = LockObject.of_catalog_table("jdb", ["x"], "t")
P1 = LockObject.of_partition(T.database, "t", {"p": "1"})
P2 = LockObject.of_partition(T.database, "t", {"p": "2"})
FAIL_FAST = LockSettings(num_retries=1, retry_interval=0.01, wait_policy=WaitPolicy.RETRY)


@pytest.fixture
def mgr(hive_metastore):
    from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings

    m = MetastoreLockManager(MetastoreSettings(uris=hive_metastore.uri), FAIL_FAST)
    yield m
    m.close()


def test_catalog_objects_lock_list_and_conflict_in_the_metastore(mgr):
    writer = take(mgr, P1, X, "spark-a", "write-p1")
    try:
        listed = {(i.obj.name, i.mode) for i in mgr.list_locks()}
        assert ("jdb.x.t@p=1", X) in listed
        assert ("jdb.x.", S) in listed and ("jdb.", S) in listed
        below = {i.obj.name for i in mgr.list_locks(LockObject.of_catalog("jdb"))}
        assert below >= {"jdb.", "jdb.x.", "jdb.x.t@p=1"}
        take(mgr, P2, X, "spark-b", "write-p2").release()  # another partition goes on
        with pytest.raises(LockConflictError, match="jdb.x.t"):
            take(mgr, T, X, "spark-b", "whole-table")
        with pytest.raises(LockConflictError):
            take(mgr, LockObject.of_namespace("jdb", ["x"]), X, "spark-b", "drop-namespace")
        # Hive's objects of similar names are other objects
        take(mgr, LockObject.of_table("jdb", "x"), X, "spark-b", "hive-x").release()
        take(mgr, LockObject.of_database("jdb"), X, "spark-b", "hive-db").release()
    finally:
        writer.release()
    take(mgr, T, X, "spark-b", "whole-table").release()


def test_a_catalog_of_the_metastore_s_own_tables_locks_them_as_hive_does(hive_metastore):
    """With ``ice`` an Iceberg ``HiveCatalog`` on this metastore (``catalogs``), ``ice.db.t``
    is the metastore's ``db.t``: a lock on one meets a lock on the other, each shown as its
    taker or the listing named it."""
    from sparklock.managers.metastore import MetastoreLockManager, MetastoreSettings

    settings = MetastoreSettings(uris=hive_metastore.uri, catalogs=frozenset({"ICE"}))
    m = MetastoreLockManager(settings, FAIL_FAST)
    ice_t = LockObject.of_catalog_table("ice", ["icedb"], "t")
    hive_t = LockObject.of_table("icedb", "t")
    try:
        held = take(m, ice_t, X, "spark-a", "iceberg-write")
        try:
            assert (ice_t, X) in {(i.obj, i.mode) for i in m.list_locks()}
            with pytest.raises(LockConflictError, match="ice.icedb.t"):
                take(m, hive_t, S, "spark-b", "hive-read")
            # listed under either name, as its taker named it
            assert {(i.obj, i.mode) for i in m.list_locks(hive_t)} == {(ice_t, X)}
        finally:
            held.release()
        other = take(m, hive_t, X, "spark-b", "hive-write")
        try:
            with pytest.raises(LockConflictError, match="ice.icedb.t"):
                take(m, ice_t, S, "spark-a", "iceberg-read")
            assert {(i.obj, i.mode) for i in m.list_locks(ice_t)} == {(ice_t, X)}
            assert [i.obj for i in m.unlock(ice_t)] == [ice_t]  # UNLOCK TABLE ice.icedb.t
        finally:
            other.release()
        assert m.list_locks(ice_t) == []
    finally:
        m.close()
