"""Delta's log commits checked against the lease: the builder's part (docs/fencing.md).

Delta writes a table's data files where no reader looks until its commit file
``_delta_log/<version>.json`` exists, and writes that file through a ``LogStore`` chosen per
path scheme (``spark.delta.logStore.<scheme>.impl``, read from the SparkConf when Delta first
needs a store). :func:`configure` points each scheme Delta has a default store for at the shim's
store wrapping that same default (``io.sparklock.shim.delta``), which checks the lease right
before the commit file is written, and puts the Delta part's jar on ``spark.jars``.

It does so only when the session will have Delta (its extension, catalog or artifact on the
builder, in ``spark-defaults.conf`` or in ``PYSPARK_SUBMIT_ARGS``, or its classes in a JVM
already running) and leaves alone every scheme the user chose a
store for; with ``spark.delta.logStore.class`` set (Delta refuses it together with any
per-scheme key) it sets nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("sparklock")

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
DELTA_STORE_API = "io.delta.storage.LogStore"
CLASS_KEYS = ("spark.delta.logStore.class", "delta.logStore.class")

_PACKAGE = "io.sparklock.shim.delta"
#: Delta's default store per scheme (DelegatingLogStore), as the shim's wrapper of it. Other
#: schemes get Delta's HDFSLogStore unwrapped (not named here: Delta has no key for "the rest").
STORES = {
    **dict.fromkeys(("file", "hdfs"), f"{_PACKAGE}.LeaseHdfsLogStore"),
    **dict.fromkeys(("s3", "s3a", "s3n"), f"{_PACKAGE}.LeaseS3LogStore"),
    **dict.fromkeys(("abfs", "abfss", "adl", "wasb", "wasbs"), f"{_PACKAGE}.LeaseAzureLogStore"),
    "gs": f"{_PACKAGE}.LeaseGcsLogStore",
}


def scheme_key(scheme: str) -> str:
    return f"spark.delta.logStore.{scheme}.impl"


def _listed(options: Mapping[str, Any], key: str) -> list[str]:
    return [x.strip() for x in str(options.get(key) or "").split(",") if x.strip()]


#: the keys that say a session has Delta, wherever they are set
DETECT_KEYS = (
    "spark.sql.extensions",
    "spark.sql.catalog.spark_catalog",
    "spark.jars.packages",
    "spark.jars",
)


def uses_delta(
    options: Mapping[str, Any], jvm: Any = None, outside: Mapping[str, str] | None = None
) -> bool:
    """Whether the session this builder makes will have Delta: from the builder's ``options``,
    what is set ``outside`` it (``spark-defaults.conf``, ``PYSPARK_SUBMIT_ARGS``:
    :func:`sparklock.spark.launch_conf.outside_builder`) or a running ``jvm``'s classes."""
    if outside:
        merged = {
            k: ",".join(str(v) for v in (options.get(k), outside.get(k)) if v) for k in DETECT_KEYS
        }
        options = {**options, **merged}
    if DELTA_EXTENSION in _listed(options, "spark.sql.extensions"):
        return True
    if DELTA_CATALOG in _listed(options, "spark.sql.catalog.spark_catalog"):
        return True
    if any(p.startswith("io.delta:") for p in _listed(options, "spark.jars.packages")):
        return True
    if any("delta-spark" in j.rsplit("/", 1)[-1] for j in _listed(options, "spark.jars")):
        return True
    return jvm is not None and _loadable(jvm, DELTA_STORE_API)


def _loadable(jvm: Any, name: str) -> bool:
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(name, False, loader)
        return True
    except Exception:  # noqa: BLE001 - py4j raises Py4JJavaError for ClassNotFoundException
        return False


def stores_to_set(options: Mapping[str, Any], defaults: Mapping[str, str]) -> dict[str, str]:
    """The ``spark.delta.logStore.<scheme>.impl`` keys to set: every scheme of :data:`STORES`
    the user (builder ``options`` or ``spark-defaults.conf``, ``defaults``) left alone; none when
    a store class is set for all schemes."""
    chosen = {**defaults, **{k: str(v) for k, v in options.items()}}
    if any(chosen.get(k) for k in CLASS_KEYS):
        return {}
    out = {}
    for scheme, store in STORES.items():
        key = scheme_key(scheme)
        if not chosen.get(key) and not chosen.get(key.removeprefix("spark.")):
            out[key] = store
    return out


def configure(builder: Any, jvm: Any = None) -> str | None:
    """Set the stores and add the Delta part's jar to ``spark.jars`` (returns the jar) when the
    session will have Delta; None otherwise, or when the jar cannot be had (logged: Delta's
    commits are then fenced by job cancellation only)."""
    from ..shim import ShimBuildError, delta_jar
    from .driver_classpath import spark_defaults_value
    from .launch_conf import outside_builder

    options = builder._options
    if not uses_delta(options, jvm, outside_builder(DETECT_KEYS)):
        return None
    keys = [*CLASS_KEYS, *(scheme_key(s) for s in STORES)]
    defaults = {k: v for k in keys if (v := spark_defaults_value(k))}
    stores = stores_to_set(options, defaults)
    if not stores:
        return None
    try:
        jar = str(delta_jar.jar_path())
    except ShimBuildError as e:
        log.warning(
            "sparklock: Delta's log commits are not checked against the lease (%s); they "
            "are fenced by job cancellation only",
            e,
        )
        return None
    for key, store in stores.items():
        builder.config(key, store)
    jars = _listed(options, "spark.jars")
    if jar not in jars:
        builder.config("spark.jars", ",".join([*jars, jar]))
    return jar


def unchecked_schemes(session: Any) -> list[str]:
    """The schemes whose Delta log commits the running ``session`` does not check: none when it
    has no Delta (its conf and its classes, however Delta was configured) or its user chose the
    stores; otherwise each scheme of :data:`STORES` whose key the running conf lacks."""
    conf = session.sparkContext.getConf()
    running = {k: conf.get(k) for k in (*DETECT_KEYS, *CLASS_KEYS)}
    if not uses_delta(running, session.sparkContext._jvm):
        return []
    if any(running.get(k) for k in CLASS_KEYS):
        return []
    return [
        s
        for s in STORES
        if not conf.get(scheme_key(s)) and not conf.get(f"delta.logStore.{s}.impl")
    ]


def warn_if_unchecked(session: Any) -> None:
    """After the session started: a Delta this process could not foresee (configured where
    :func:`configure` does not look) is named in a WARNING, with the keys that would check it."""
    schemes = unchecked_schemes(session)
    if schemes:
        log.warning(
            "sparklock: this session has Delta Lake but its log commits of %s are not checked "
            "against the lease (fenced by job cancellation only): configure Delta on the "
            "builder passed to sparklock.configure, or set %s (docs/fencing.md)",
            ", ".join(schemes),
            ", ".join(f"{scheme_key(s)}={STORES[s]}" for s in schemes),
        )
