"""Which catalogs of a session keep their tables in the metastore the manager locks in.

An Iceberg ``HiveCatalog`` (``spark.sql.catalog.ice = org.apache.iceberg.spark.SparkCatalog``
with ``type=hive`` or ``catalog-impl=org.apache.iceberg.hive.HiveCatalog``) stores each table as
a metastore table ``db.t``: Hive, Trino and other engines lock that object, so sparklock must
lock it too rather than a name of its own. Decided from the session's configuration (which the
JVM forwards: a catalog's class, ``type``, ``catalog-impl`` and ``uri``), never from SQL text: a
catalog counts when its metastore URI (its ``uri``, else the session's ``hive.metastore.uris``,
as Iceberg falls back) names the same metastore as the manager's.
"""

from __future__ import annotations

from collections.abc import Mapping

from .uris import parse_uris

CATALOG_PREFIX = "spark.sql.catalog."
#: Iceberg's catalog classes; both honour ``type`` / ``catalog-impl``.
ICEBERG_CATALOGS = frozenset(
    {"org.apache.iceberg.spark.SparkCatalog", "org.apache.iceberg.spark.SparkSessionCatalog"}
)
HIVE_CATALOG_IMPL = "org.apache.iceberg.hive.HiveCatalog"
SESSION_CATALOG = "spark_catalog"


def _endpoints(uris: str) -> frozenset[tuple[str, int]]:
    try:
        return frozenset((host.lower(), port) for host, port in parse_uris(uris))
    except ValueError:
        return frozenset()


def is_hive_catalog(conf: Mapping[str, str], name: str) -> bool:
    """Whether catalog ``name`` is an Iceberg catalog whose tables live in a Hive metastore."""
    key = CATALOG_PREFIX + name
    if str(conf.get(key, "")).strip() not in ICEBERG_CATALOGS:
        return False
    impl = str(conf.get(f"{key}.catalog-impl", "") or "").strip()
    if impl:
        return impl == HIVE_CATALOG_IMPL
    return str(conf.get(f"{key}.type", "") or "").strip().lower() == "hive"


def metastore_catalogs(
    conf: Mapping[str, str], manager_uris: str, session_uris: str = ""
) -> frozenset[str]:
    """The names of the catalogs whose tables are the tables of the metastore at
    ``manager_uris``; ``session_uris`` is the session's ``hive.metastore.uris``, which a
    catalog without a ``uri`` of its own uses. Any shared endpoint counts: a list of URIs names
    one metastore service."""
    mine = _endpoints(manager_uris) if manager_uris else frozenset()
    if not mine:
        return frozenset()
    names = set()
    for key in conf:
        name = key[len(CATALOG_PREFIX) :] if key.startswith(CATALOG_PREFIX) else ""
        if not name or "." in name or not is_hive_catalog(conf, name):
            continue
        uri = str(conf.get(f"{key}.uri", "") or "").strip() or session_uris
        if uri and _endpoints(uri) & mine:
            names.add(name)
    return frozenset(names)
