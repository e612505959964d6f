"""``python -m sparklock connect-server``: a Spark Connect server in a sparklock driver.

Every Connect session is a SparkSession of its own (``newSession()``), hence its own lock owner;
its statements carry the Connect user id (``SHOW LOCKS EXTENDED``'s ``user``; it comes from the
client and is not authenticated) and the client's address (``client``), which Spark Connect does
not keep: the shim's gRPC interceptor (``io.sparklock.shim.ConnectClientInterceptor``, added to
``spark.connect.grpc.interceptor.classes``) records it per Connect session.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import MutableMapping
from typing import Any

from ..errors import SparkLockError
from . import common, sessions

log = logging.getLogger("sparklock")

DEFAULT_PORT = 15002
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


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "connect-server",
        help="run a Spark Connect server whose sessions take locks",
        description=__doc__.split("\n\n")[0],
    )
    common.add_server_arguments(p, DEFAULT_PORT)
    p.set_defaults(run_server=run)


def _append(conf: MutableMapping[str, Any], key: str, item: str) -> None:
    items = [x.strip() for x in str(conf.get(key) or "").split(",") if x.strip()]
    if item not in items:
        items.append(item)
    conf[key] = ",".join(items)


def require_connect_server() -> None:
    """Spark Connect's server ships in the pyspark wheel from Spark 4.0 on (spark-connect_*.jar);
    pyspark 3.5 has none, and nothing can be fetched at run time: say so instead of a
    ClassNotFoundException from Spark's plugin loader."""
    from ..shim import spark_jars_dir
    from ..spark.builder import SparkLockSetupError

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
    jvm.io.sparklock.shim.ServerSessions.serveConnect(spark.sparkContext._jsc.sc())


def run(args: argparse.Namespace) -> int:
    try:
        require_connect_server()
    except SparkLockError as e:
        return common.fail(str(e))
    stop = common.StopRequest()
    stop.install()
    conf = common.parse_conf(args.conf)
    conf["spark.connect.grpc.binding.address"] = args.host
    conf["spark.connect.grpc.binding.port"] = str(args.port)
    spark = common.build_spark(dict(connect_conf(conf)), "sparklock-connect-server")
    stop.install()
    try:
        serve_connect(spark)
        common.wait_for_port(args.host, args.port, 120.0, lambda: not stop.event.is_set())
        common.announce(f"sparklock connect-server ready: sc://{args.host}:{args.port}")
        stop.wait()
        log.info("sparklock: connect-server stopping (%s)", stop.signal_name)
        return 0
    except RuntimeError as e:
        return common.fail(str(e))
    finally:
        try:
            common.drain(spark)
        finally:
            common.stop_driver(spark)
