"""``python -m sparklock thriftserver``: a Spark Thrift Server (HiveServer2 protocol) in a
sparklock driver.

Every JDBC session is a SparkSession of its own (``newSession()``), hence its own lock owner; its
statements carry the JDBC user name and client address (``SHOW LOCKS EXTENDED``'s ``user`` and
``client``). Hive-format tables need Hive support: ``--hive``
(``spark.sql.catalogImplementation=hive``).
"""

from __future__ import annotations

import argparse
import logging

from .. import help_text
from ..service import sessions
from . import common

log = logging.getLogger("sparklock")

DEFAULT_PORT = 10000
THRIFT_SERVER_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "thriftserver",
        help="run a Spark Thrift Server (beeline/JDBC) whose sessions take locks",
        description=help_text.summary(__doc__),
    )
    common.add_server_arguments(p, DEFAULT_PORT)
    p.add_argument(
        "--hive",
        action="store_true",
        help="Hive support (Hive-format tables, a Hive metastore): "
        "spark.sql.catalogImplementation=hive",
    )
    p.set_defaults(run_server=run)


def server_conf(args: argparse.Namespace) -> dict[str, str]:
    conf = common.parse_conf(args.conf)
    conf["hive.server2.thrift.bind.host"] = args.host
    conf["hive.server2.thrift.port"] = str(args.port)
    conf.setdefault("hive.server2.transport.mode", "binary")
    if args.hive:
        conf["spark.sql.catalogImplementation"] = "hive"
    return conf


def run(args: argparse.Namespace) -> int:
    stop = common.StopRequest()
    stop.install()  # before the JVM starts: a SIGTERM during start-up stops cleanly too
    spark = common.build_spark(server_conf(args), "sparklock-thriftserver")
    stop.install()  # pyspark's context installs its own SIGINT handler: ours wins
    server = None
    try:
        jvm = spark.sparkContext._jvm
        sessions.install()
        thrift = jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
        server = thrift.startWithContext(spark._jsparkSession.sqlContext())
        jvm.io.sparklock.shim.SparkLockBridge.serveThrift(server, spark.sparkContext._jsc.sc())
        common.wait_for_port(args.host, args.port, 120.0, lambda: not stop.event.is_set())
        common.announce(f"sparklock thriftserver ready: jdbc:hive2://{args.host}:{args.port}/")
        stop.wait()
        log.info("sparklock: thriftserver stopping (%s)", stop.signal_name)
        return 0
    except RuntimeError as e:
        return common.fail(str(e))
    finally:
        try:
            if server is not None:
                common.drain(spark, timeout=1.0)  # cancel what runs before closing sessions
                server.stop()
            common.drain(spark)
        finally:
            common.stop_driver(spark)
