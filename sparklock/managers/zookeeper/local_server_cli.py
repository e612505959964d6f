"""``python -m sparklock zookeeper [--port P] [--data-dir D]``: one local ZooKeeper, foreground.

For trying sparklock's ZooKeeper manager and for development: a single server from the jars of
the installed pyspark (:mod:`.local_server`) on 127.0.0.1. It prints its connection string once
the server answers, and on SIGTERM/SIGINT stops the JVM, waits until it is gone and removes the
temporary data directory (a ``--data-dir`` is kept). Not for production: there, run a ZooKeeper
ensemble of three or five servers on separate machines and point
``spark.sparklock.zookeeper.quorum`` at all of them.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import threading
from pathlib import Path
from typing import TextIO

from .local_server import ZooKeeperServer, port_in_use

DEFAULT_PORT = 2181  # the default of spark.sparklock.zookeeper.quorum


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``zookeeper`` subcommand (it needs no lock manager: ``standalone``)."""
    s = sub.add_parser(
        "zookeeper",
        help="run one local ZooKeeper server from pyspark's jars (development only)",
        description="One ZooKeeper server from the jars of the installed pyspark, on 127.0.0.1, "
        "in the foreground until SIGTERM/SIGINT. For trying sparklock and for development, not "
        "for production (there: a ZooKeeper ensemble of three or five servers).",
    )
    s.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="client port (default 2181; 0: any free)"
    )
    s.add_argument(
        "--data-dir",
        type=Path,
        help="keep the server's data here (default: a temporary directory, removed on exit)",
    )
    s.set_defaults(standalone=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Serve until SIGTERM/SIGINT; 0 after a clean stop, 1 if the server could not start or
    died on its own."""
    if args.port and port_in_use(args.port):
        print(
            f"port {args.port} on 127.0.0.1 is in use (another ZooKeeper?); "
            "choose another with --port",
            file=sys.stderr,
        )
        return 1
    stop = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)
    }
    data_dir = args.data_dir.resolve() if args.data_dir else None
    server = ZooKeeperServer(data_dir=data_dir, port=args.port or None)
    try:
        try:
            server.start(wait=False)
            server.wait_serving(60)
        except (RuntimeError, TimeoutError) as e:
            print(f"{e}\n{_tail(server.log_path)}", file=sys.stderr)
            return 1
        print(f"ZooKeeper {server.version} from pyspark's jars, for development only", file=out)
        print(f"data: {server.data_dir} (log: {server.log_path})", file=out)
        print(
            "use: --conf spark.sparklock.manager=zookeeper "
            f"--conf spark.sparklock.zookeeper.quorum={server.address}",
            file=out,
        )
        print(f"connection string: {server.address}", file=out, flush=True)
        while not stop.wait(0.5):
            if server.proc is None or server.proc.poll() is not None:
                print(f"ZooKeeper exited on its own\n{_tail(server.log_path)}", file=sys.stderr)
                return 1
        print("stopping ZooKeeper", file=out, flush=True)
        return 0
    finally:
        server.stop()  # SIGTERM: ZooKeeper shuts down cleanly; waits until the JVM is gone
        if args.data_dir is None:
            shutil.rmtree(server.data_dir, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
