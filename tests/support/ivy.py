"""Spark's Ivy resolver, run once per machine for a cache the tests share.

Ivy's cache is not safe for two resolvers writing it at once (test processes side by side, each
starting its first session on a fresh machine): the first caller resolves under a lock file, in
a Python process of its own (the caller may run a JVM already), and writes a marker once the
resolution completed; the others wait for it and then find the cache ready.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path


def resolve_once(cache: Path, script: str, what: str) -> Path:
    """Run ``script`` (a session that makes Spark resolve ``what`` into ``cache / "ivy"``) unless
    ``cache / "resolved"`` says an earlier run did; that marker's path."""
    done = cache / "resolved"
    if done.exists():
        return done
    (cache / "ivy").mkdir(parents=True, exist_ok=True)
    with open(cache / ".resolve.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            proc = subprocess.run(
                [sys.executable, "-c", script],
                capture_output=True,
                text=True,
                check=False,
                env=dict(os.environ, PYSPARK_SUBMIT_ARGS="pyspark-shell"),
            )
            if proc.returncode != 0:
                raise RuntimeError(f"resolving {what} failed:\n{proc.stderr[-3000:]}")
            done.write_text(what + "\n")
    return done
