"""Spark Connect served by this driver: the plugin, the client-address interceptor, the fast-detach
defaults (for ``python -m sparklock connect-server`` and for ``remote("local[...]")``)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from ..errors import SparkLockSetupError
from ..service import sessions
from ..shim import spark_jars_dir

CONNECT_PLUGIN = "org.apache.spark.sql.connect.SparkConnectPlugin"
#: Records each Connect session's client address (jvm-shim/src/compat/connect).
CLIENT_INTERCEPTOR = "io.sparklock.shim.ConnectClientInterceptor"
INTERCEPTORS_KEY = "spark.connect.grpc.interceptor.classes"

#: Defaults so that a vanished client's statement is noticed in under a minute, not minutes (a
#: response stream is closed after senderMaxStreamDuration and the client reattaches; an operation
#: nobody reattaches to is interrupted after the detached timeout, releasing its locks).
CONNECT_DEFAULTS = {
    "spark.connect.execute.reattachable.senderMaxStreamDuration": "20s",
    "spark.connect.execute.manager.detachedTimeout": "15s",
    "spark.connect.execute.manager.maintenanceInterval": "5s",
}


def _append(conf: MutableMapping[str, Any], key: str, item: str) -> None:
    items = [x.strip() for x in str(conf.get(key) or "").split(",") if x.strip()]
    if item not in items:
        items.append(item)
    conf[key] = ",".join(items)


def require_connect_server() -> None:
    """Spark Connect's server ships in the pyspark wheel from Spark 4.0 on (spark-connect_*.jar);
    pyspark 3.5 has none, and nothing can be fetched at run time: say so instead of a
    ClassNotFoundException from Spark's plugin loader."""
    if not any(spark_jars_dir().glob("spark-connect_*.jar")):
        import pyspark

        raise SparkLockSetupError(
            f"pyspark {pyspark.__version__} ships no Spark Connect server (no spark-connect_*.jar "
            f"in {spark_jars_dir()}): the Connect server needs pyspark 4.0 or newer"
        )


def connect_conf(conf: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """The plugin, the client-address interceptor and the fast-detach defaults, added to
    ``conf`` (a user's own value wins; a user's own interceptors stay, ours is added)."""
    require_connect_server()
    _append(conf, "spark.plugins", CONNECT_PLUGIN)
    _append(conf, INTERCEPTORS_KEY, CLIENT_INTERCEPTOR)
    for key, value in CONNECT_DEFAULTS.items():
        conf.setdefault(key, value)
    return conf


def serve_connect(spark: Any) -> None:
    """Marks ``spark``'s JVM as serving Connect sessions (also for ``remote("local[...]")``)."""
    sessions.install()
    jvm = spark.sparkContext._jvm
    jvm.io.sparklock.shim.SparkLockBridge.serveConnect(spark.sparkContext._jsc.sc())
