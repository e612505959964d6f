"""``python -m sparklock``: list, force-release and stale-state cleanup against a real ZooKeeper."""

from __future__ import annotations

import io
import subprocess
import sys
import time

import pytest

from sparklock.cli import main
from sparklock.config import LockSettings
from sparklock.locks.model import LockMode, LockRequest, LockType
from sparklock.locks.objects import LockObject
from sparklock.managers.zookeeper import ZooKeeperLockManager
from tests.support.show_locks_columns import EXTENDED

pytestmark = pytest.mark.zookeeper
FAST = LockSettings(num_retries=1, retry_interval=0.01)
T = LockObject.of_table("default", "t")
P = LockObject.of_partition("default", "t", {"p": "1"})


@pytest.fixture
def manager(zk_server, zk_namespace):
    with ZooKeeperLockManager.connect(zk_server.address, zk_namespace, settings=FAST) as m:
        yield m


def run(zk_server, ns, *args):
    out = io.StringIO()
    code = main([*args, "--quorum", zk_server.address, "--namespace", ns], out=out)
    return code, out.getvalue()


def test_locks_lists_extended_columns(zk_server, zk_namespace, manager):
    held = manager.acquire(
        [LockRequest(P, LockMode.EXCLUSIVE)],
        owner="o",
        query_id="q-cli",
        query_string="INSERT INTO t",
        user="alice",
    )
    code, out = run(zk_server, zk_namespace, "locks")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == EXTENDED  # ending with alive: unknown, no agent in its data
    assert all(ln.split()[-1] == "unknown" for ln in lines[1:-1])
    user_at = lines[0].index("user")
    assert any(
        ln.startswith("default@t@p=1")
        and "EXCLUSIVE" in ln
        and "q-cli" in ln
        and ln[user_at:].split()[:2] == ["alice", "ACQUIRED"]
        for ln in lines
    )
    assert lines[-1] == "(3 locks)"
    code, out = run(zk_server, zk_namespace, "locks", "--object", "default@t@p=1")
    assert out.splitlines()[-1] == "(1 lock)"
    held.release()


def test_release_force_removes_every_lock_on_the_object(zk_server, zk_namespace, manager):
    manager.acquire(
        [LockRequest(T, LockMode.SHARED)], owner="a", query_id="qa", lock_type=LockType.EXPLICIT
    )
    manager.acquire(
        [LockRequest(T, LockMode.SHARED)], owner="b", query_id="qb", lock_type=LockType.EXPLICIT
    )
    code, out = run(zk_server, zk_namespace, "release", "default@t")
    assert code == 0 and out.count("released SHARED EXPLICIT") == 2
    assert manager.list_locks() == []
    code, _ = run(zk_server, zk_namespace, "release", "default@t")
    assert code == 2  # NOT_LOCKED on stderr


def test_stale_finds_and_removes_old_explicit_locks_and_empty_nodes(
    zk_server, zk_namespace, manager
):
    manager.acquire(
        [LockRequest(T, LockMode.EXCLUSIVE)], owner="a", query_id="old", lock_type=LockType.EXPLICIT
    )
    other = LockObject.of_partition("default", "u", {"p": "1"})
    fresh = manager.acquire([LockRequest(other, LockMode.SHARED)], owner="b", query_id="implicit")
    client = manager.shared_client.ensure_started()
    leftover = f"/{zk_namespace}/default/gone_table/p=9"
    client.ensure_path(leftover)  # what a crashed peer could leave behind
    time.sleep(1.1)
    code, out = run(zk_server, zk_namespace, "stale", "--older-than", "1s")
    assert code == 0 and "stale explicit lock: default@t EXCLUSIVE" in out
    assert f"empty object node: {leftover}" in out and "--apply" in out
    assert client.exists(leftover)  # nothing removed without --apply
    code, out = run(zk_server, zk_namespace, "stale", "--older-than", "1s", "--apply")
    assert code == 0 and "removed 1 stale explicit lock(s), 1 empty node(s)" in out
    assert not client.exists(leftover)
    assert [i.data.query_id for i in manager.list_locks()] == ["implicit"] * 3
    fresh.release()


def test_bad_config_names_the_key(zk_server, zk_namespace):
    out = io.StringIO()
    err = io.StringIO()
    sys_stderr, sys.stderr = sys.stderr, err
    try:
        code = main(
            [
                "locks",
                "--quorum",
                zk_server.address,
                "--conf",
                "spark.sparklock.zookeeper.sessionTimeout=soon",
            ],
            out=out,
        )
    finally:
        sys.stderr = sys_stderr
    assert code == 2 and "spark.sparklock.zookeeper.sessionTimeout" in err.getvalue()


def test_module_entry_point_runs(zk_server, zk_namespace):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparklock",
            "locks",
            "--quorum",
            zk_server.address,
            "--namespace",
            zk_namespace,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "(0 locks)"


def _help(*args: str) -> str:
    out = io.StringIO()
    real = sys.stdout
    sys.stdout = out  # argparse prints help to sys.stdout
    try:
        with pytest.raises(SystemExit) as done:
            main([*args, "--help"])
    finally:
        sys.stdout = real
    assert done.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize(
    "command",
    ["", "locks", "release", "stale", "zookeeper", "submit-conf", "thriftserver", "connect-server"],
)
def test_help_is_in_plain_words_under_the_console_name(command):
    text = _help(*([command] if command else []))
    assert text.startswith("usage: sparklock ")
    assert "``" not in text and ":mod:" not in text, text


def test_the_console_script_is_declared_for_the_same_main():
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+")
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"sparklock": "sparklock.cli:main"}
