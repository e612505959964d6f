"""What both servers share: ``--conf`` parsing, the sparklock-configured driver, readiness, and a
clean stop on SIGTERM/SIGINT (waits and jobs cancelled, locks released, ZooKeeper closed)."""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

log = logging.getLogger("sparklock")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_MASTER = "local[2]"
#: How long a stopping server waits for its statements to give their locks back.
DRAIN_TIMEOUT = 20.0


def parse_conf(items: Sequence[str] | None) -> dict[str, str]:
    """``key=value`` items (``--conf``) as a dict; a malformed item exits with a usage error."""
    conf: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--conf takes key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf


def add_server_arguments(p: argparse.ArgumentParser, default_port: int) -> None:
    p.add_argument("--host", default=DEFAULT_HOST, help=f"bind address (default {DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=default_port, help=f"port (default {default_port})")
    p.add_argument(
        "--conf",
        action="append",
        metavar="KEY=VALUE",
        help="a Spark conf (repeatable): spark.sparklock.*, spark.master, ...",
    )


def build_spark(conf: dict[str, str], app_name: str) -> Any:
    """A classic SparkSession with sparklock installed and attached (``spark.master`` default
    ``local[2]``)."""
    from pyspark.sql import SparkSession

    from ..spark.builder import configure

    builder = SparkSession.builder.appName(app_name)
    if "spark.master" not in conf:
        builder = builder.master(DEFAULT_MASTER)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return configure(builder).getOrCreate()


def wait_for_port(host: str, port: int, timeout: float, alive: Callable[[], bool]) -> None:
    """Returns once ``host:port`` accepts TCP connections; raises after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError("the server stopped while starting")
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing accepts connections on {host}:{port} after {timeout:.0f}s")


class StopRequest:
    """SIGTERM / SIGINT set an event the main thread waits on (the handlers do nothing else)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal_name = ""

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: Any) -> None:
        self.signal_name = signal.Signals(signum).name
        self.event.set()

    def wait(self) -> None:
        while not self.event.wait(0.5):
            pass


def drain(spark: Any, timeout: float = DRAIN_TIMEOUT) -> bool:
    """Cancels every lock wait and every job until no statement holds or waits for locks.

    Called once the server accepts no more statements; True when drained within ``timeout``."""
    from ..service import get_service

    service = get_service()
    deadline = time.monotonic() + timeout
    while True:
        service.cancel_waits(reason="the server stopping")
        try:
            spark.sparkContext._jsc.sc().cancelAllJobs()
        except Exception:  # the context may be stopping already
            log.debug("sparklock: cancelAllJobs while stopping failed", exc_info=True)
        if service.open_handles() == 0 and service.waiting() == 0:
            return True
        if time.monotonic() > deadline:
            log.warning(
                "sparklock: %d statement(s) still hold locks after %.0fs; stopping anyway "
                "(ZooKeeper drops their locks with the session)",
                service.open_handles(),
                timeout,
            )
            return False
        time.sleep(0.2)


def stop_driver(spark: Any) -> None:
    """Stops Spark and closes every lock manager (the ZooKeeper session with it)."""
    from .. import managers

    try:
        spark.stop()
    finally:
        managers.close_all()


def announce(line: str) -> None:
    """The one line a supervisor or a test waits for."""
    print(line, flush=True)


def fail(message: str) -> int:
    print(f"sparklock: {message}", file=sys.stderr, flush=True)
    return 1
