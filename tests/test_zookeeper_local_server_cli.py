"""``sparklock zookeeper`` (``managers/zookeeper/local_server_cli.py``): a real local server that
answers, and stops cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from sparklock.managers.zookeeper.local_server import free_port, port_in_use

pytestmark = pytest.mark.zookeeper
REPO = Path(__file__).resolve().parents[1]


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sparklock", "zookeeper", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def connection_string(proc: subprocess.Popen, timeout: float = 60.0) -> tuple[str, list[str]]:
    """Read stdout up to the ``connection string:`` line (printed once the server answers)."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"exited {proc.wait()}: {lines} {proc.stderr.read()}")
        lines.append(line.rstrip("\n"))
        if line.startswith("connection string: "):
            return line.split(": ", 1)[1].strip(), lines
    raise AssertionError(f"no connection string after {timeout}s: {lines}")


def data_dir_of(lines: list[str]) -> Path:
    line = next(ln for ln in lines if ln.startswith("data: "))
    return Path(line.split(" ", 2)[1])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serves_then_stops_cleanly_on_signal(sig):
    port = free_port()
    proc = start("--port", str(port))
    try:
        address, lines = connection_string(proc)
        assert address == f"127.0.0.1:{port}"
        data_dir = data_dir_of(lines)
        client = KazooClient(hosts=address)
        client.start(10)
        try:
            client.create("/sparklock-cli-probe", b"x")
            assert client.get("/sparklock-cli-probe")[0] == b"x"
        finally:
            client.stop()
            client.close()
        proc.send_signal(sig)
        assert proc.wait(30) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert not port_in_use(port)  # the JVM is gone, not only its Python owner
    assert not data_dir.exists()  # the temporary data directory was removed


def test_given_data_dir_is_kept_and_busy_port_refused(tmp_path):
    data_dir = tmp_path / "zk"
    proc = start("--port", "0", "--data-dir", str(data_dir))
    try:
        address, _ = connection_string(proc)
        busy = start("--port", address.rsplit(":", 1)[1])
        assert busy.wait(30) == 1
        assert "in use" in busy.stderr.read()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert (data_dir / "zoo.cfg").exists() and (data_dir / "data").is_dir()
