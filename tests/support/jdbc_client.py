"""``JdbcLoad.java``: many JDBC sessions in one JVM (hive-jdbc from the pyspark jars), compiled on
first use into a cache keyed by the source's hash."""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

from tests.support.zookeeper import CLASSPATH

SOURCE = Path(__file__).with_name("JdbcLoad.java")


def compiled() -> Path:
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"sparklock-jdbcload-{digest}"
    if not (out / "JdbcLoad.class").exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["javac", "-nowarn", "-d", str(out), "-cp", CLASSPATH, str(SOURCE)],
            check=True,
            capture_output=True,
            text=True,
        )
    return out


def run(*args: str, timeout: float = 900.0) -> list[list[str]]:
    """Runs ``JdbcLoad args...``; returns its result lines split on tabs (DONE dropped)."""
    classes = compiled()
    proc = subprocess.run(
        ["java", "-cp", f"{classes}:{CLASSPATH}", "JdbcLoad", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = [ln.split("\t") for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or ["DONE"] not in lines:
        raise RuntimeError(f"JdbcLoad failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return [ln for ln in lines if ln != ["DONE"]]
