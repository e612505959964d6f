"""A driver JVM that dies under its living Python (the OOM killer, a crash): the statement
locks Python holds for it are released at once (``sparklock.spark.jvm_watch``), instead of
living as long as the Python process keeps its ZooKeeper session."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.support.driver import Driver
from tests.support.lease_faults import wait_until
from tests.support.nemesis import trials
from tests.support.zk_tree import inspecting, znodes

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper, pytest.mark.nemesis]


def java_below(pid: int) -> int:
    """The ``java`` process among ``pid``'s descendants (pyspark's gateway JVM)."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        if (Path("/proc") / str(child) / "comm").read_text().strip() == "java":
            return child
        todo += children.get(child, [])
    raise AssertionError(f"no java process below {pid}")


def test_a_dead_driver_jvm_leaves_no_statement_locks(zk_server, zk_namespace, tmp_path):
    for k in range(trials()):
        jvm_killed(zk_server, f"{zk_namespace}_{k}", tmp_path / str(k))


def jvm_killed(zk_server, zk_namespace: str, work: Path) -> None:
    driver = Driver(zk_server.address, zk_namespace, str(work / "warehouse"))
    root = "/" + zk_namespace
    try:
        assert driver.sql("CREATE TABLE j (id INT) USING parquet")["ok"]
        slow = "INSERT INTO j SELECT slow(CAST(id AS INT), 1.0) FROM range(0, 120, 1, 2)"
        driver.send({"op": "bg", "sql": slow, "id": "w"})
        with inspecting(zk_server.address) as zk:
            wait_until(lambda: znodes(zk, root, locks_only=True), 60, "the writer's locks")
            os.kill(java_below(driver.proc.pid), signal.SIGKILL)
            wait_until(
                lambda: not znodes(zk, root, locks_only=True), 15, "the dead JVM's locks released"
            )
        assert driver.proc.poll() is None, "the driver's Python should still run"
    finally:
        driver.kill()
