"""Which catalogs keep their tables in the manager's metastore, and how their objects are sent
to it and named back (pure: no metastore, no Spark)."""

from __future__ import annotations

from sparklock.locks.model import LockMode, LockRequest
from sparklock.locks.objects import LockObject
from sparklock.managers.metastore import mapping
from sparklock.managers.metastore.catalogs import metastore_catalogs
from sparklock.managers.metastore.settings import MetastoreSettings
from sparklock.spark.iceberg_hive import commit_lock_keys

HMS = "thrift://hms-1:9083"
SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"


def iceberg(name: str, **props: str) -> dict[str, str]:
    key = f"spark.sql.catalog.{name}"
    return {key: SPARK_CATALOG, **{f"{key}.{k.replace('_', '-')}": v for k, v in props.items()}}


def test_an_iceberg_hive_catalog_on_the_manager_s_metastore_counts():
    conf = {
        **iceberg("ice", type="hive", uri="thrift://HMS-1:9083,thrift://hms-2:9083"),
        **iceberg("impl", catalog_impl="org.apache.iceberg.hive.HiveCatalog", uri=HMS),
        **iceberg("other", type="hive", uri="thrift://elsewhere:9083"),
        **iceberg("files", type="hadoop", warehouse="/w"),
        **iceberg("jdbc", catalog_impl="org.apache.iceberg.jdbc.JdbcCatalog", uri=HMS),
        "spark.sql.catalog.paimon": "org.apache.paimon.spark.SparkCatalog",
        "spark.sql.catalog.paimon.type": "hive",
        "spark.sql.catalog.paimon.uri": HMS,
    }
    assert metastore_catalogs(conf, HMS) == {"ice", "impl"}
    assert metastore_catalogs(conf, "") == frozenset()


def test_a_catalog_without_a_uri_uses_the_session_s_metastore_as_iceberg_does():
    conf = {
        **iceberg("ice", type="hive"),
        "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
        "spark.sql.catalog.spark_catalog.type": "hive",
        "hive.metastore.uris": HMS,
        "spark.sparklock.manager": "metastore",
    }
    assert MetastoreSettings.from_conf(conf).catalogs == {"ice", "spark_catalog"}
    own = {**conf, "spark.sparklock.metastore.uris": "thrift://another:9083"}
    assert MetastoreSettings.from_conf(own).catalogs == frozenset()


def test_iceberg_s_commit_lock_is_turned_off_only_under_the_metastore_manager():
    conf = {**iceberg("ice", type="hive"), "hive.metastore.uris": HMS}
    key = "spark.sql.catalog.ice.hadoop.iceberg.engine.hive.lock-enabled"
    assert commit_lock_keys({**conf, "spark.sparklock.manager": "metastore"}) == [key]
    assert commit_lock_keys(conf) == []  # the embedded manager locks nothing in the metastore
    off = {**conf, "spark.sparklock.manager": "metastore", "spark.sparklock.enabled": "false"}
    assert commit_lock_keys(off) == []


def test_objects_of_such_a_catalog_are_sent_as_the_metastore_s_own():
    ice = frozenset({"ice"})
    table = LockObject.of_catalog_table("ice", ["db"], "t")
    assert mapping.hive_object(table, ice) == LockObject.of_table("db", "t")
    assert mapping.hive_object(LockObject.of_namespace("ice", ["db"]), ice) == LockObject("db")
    part = LockObject.of_partition(table.database, "t", {"k": "1"})
    assert mapping.hive_object(part, ice).name == "db@t@k=1"
    # the catalog as a whole, deeper namespaces and other catalogs keep their reserved names
    for kept in (
        LockObject.of_catalog("ice"),
        LockObject.of_catalog_table("ice", ["a", "b"], "t"),
        LockObject.of_catalog_table("jdb", ["db"], "t"),
    ):
        assert mapping.hive_object(kept, ice) == kept
    sent = mapping.component(LockRequest(table, LockMode.EXCLUSIVE), ice)
    assert (sent.dbname, sent.tablename, sent.partitionname) == ("db", "t", None)
    assert mapping.component(LockRequest(table, LockMode.EXCLUSIVE)).dbname == "ice.db."


def test_rows_are_named_as_the_statement_or_the_listing_named_them():
    ice = frozenset({"ice"})
    table = LockObject.of_catalog_table("ice", ["db"], "t")
    row = LockObject.of_table("db", "t")
    assert mapping.as_named(row, [table], ice) == table
    assert mapping.as_named(row, [LockObject.of_namespace("ice", ["db"])], ice) == table
    assert mapping.as_named(row, [LockObject.of_catalog("ice")], ice) == table
    below = LockObject.of_partition("db", "t", {"k": "1"})
    assert mapping.as_named(below, [table], ice).name == "ice.db.t@k=1"
    # not at or below what was asked, or no such catalog: Hive's name
    assert mapping.as_named(LockObject.of_table("db", "u"), [table], ice).name == "db@u"
    assert mapping.as_named(row, [table], frozenset()) == row
