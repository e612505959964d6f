"""A ZooKeeper address where nothing listens fails the first connection at once, saying so.

A fresh Python process (no logging configured, as a user's script starts) connects a ZooKeeper
manager to a loopback port nobody listens on: the error comes in well under the 15 s connection
timeout, names the address and the operating system's error, gives no TLS hint (no TLS handshake
happened), and kazoo's own "Connection dropped" lines stay off stderr.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.servers import REPO

SCRIPT = textwrap.dedent(
    """
    import time
    from sparklock.errors import LockManagerUnavailableError
    from sparklock.managers.zookeeper import ZooKeeperLockManager

    manager = ZooKeeperLockManager.connect("127.0.0.1:1", connection_timeout=15.0)
    start = time.monotonic()
    try:
        manager.check_reachable()
    except LockManagerUnavailableError as e:
        print(f"{time.monotonic() - start:.3f}")
        print(e)
    """
)


def test_a_refused_address_fails_at_once_and_quietly():
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    elapsed, message = run.stdout.splitlines()[:2]
    assert float(elapsed) < 2.0, run.stdout
    assert message.startswith("LOCK_MANAGER_UNAVAILABLE: cannot connect to ZooKeeper quorum")
    assert "127.0.0.1:1: socket connection error: Connection refused" in message, message
    assert "TLS" not in message and "ssl" not in message.lower()
    assert "Connection dropped" not in run.stderr and "kazoo" not in run.stderr, run.stderr
