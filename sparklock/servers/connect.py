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

from .. import help_text
from ..errors import SparkLockError
from ..spark.connect import connect_conf, require_connect_server, serve_connect
from . import common

log = logging.getLogger("sparklock")

DEFAULT_PORT = 15002


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "connect-server",
        help="run a Spark Connect server whose sessions take locks",
        description=help_text.summary(__doc__),
    )
    common.add_server_arguments(p, DEFAULT_PORT)
    p.set_defaults(run_server=run)


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
