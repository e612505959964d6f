"""sparklock installed as users install it: the wheel built from this checkout, installed (not
editable) beside the pyspark of this run, run from outside the checkout by a Java runtime that
has no javac (tests/support/wheel_env.py), in a Python process, under ``spark-submit`` and on a
standalone master + worker whose executors' Python has no sparklock.

The run on the newest line (4.3, ``--all``) also starts the Thrift server from the wheel and uses
the standalone cluster; the oldest line's run (3.5) keeps to the Python and spark-submit smokes
(CI time). The middle lines' packaged jars are each checked in a venv of their line, except
the lines CI runs on their own (Iceberg on 4.1, Delta on 4.2: a jar of the same sources for that
line, in every session they start); ``SPARKLOCK_WHEEL_ALL_LINES=true`` checks those too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import zipfile
from pathlib import Path

import pyspark
import pytest

from sparklock.shim import prebuilt
from sparklock.shim.locate import spark_line
from tests.support import wheel_env
from tests.support.spark_versions import newest_line
from tests.support.standalone import StandaloneCluster
from tests.support.zookeeper import free_port

pytestmark = pytest.mark.spark

LINE = spark_line(pyspark.__version__)
NEWEST = newest_line()
SMOKE = Path(__file__).parent / "support" / "wheel_smoke.py"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv, env, workdir): the wheel in a venv of its own, a user's environment, a directory
    outside the checkout holding a copy of the smoke script."""
    whl = wheel_env.wheel()
    venv = wheel_env.venv(pyspark.__version__, whl)
    workdir = tmp_path_factory.mktemp("user")
    (workdir / "smoke.py").write_text(SMOKE.read_text())
    env = wheel_env.user_env(venv, wheel_env.java_runtime(), workdir)
    return venv, env, workdir


def _smoke(cmd: list[str], env: dict, cwd: Path, timeout: float = 600) -> dict:
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("SMOKE ")]
    assert proc.returncode == 0 and lines, f"exit {proc.returncode}:\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1][len("SMOKE ") :])


def _check(seen: dict, venv: Path, table: str, line: str = LINE) -> None:
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert seen["sparklock"].startswith(str(site))  # the wheel's copy, not the checkout
    assert seen["jar"] == str(site / "sparklock/shim/jars" / prebuilt.jar_name(line))
    assert ["default@" + table, "EXCLUSIVE"] in seen["explain"]
    assert seen["show"] == [["default@" + table, "EXCLUSIVE"]]
    assert "LOCK_CONFLICT" in seen["conflict"] and f"default@{table}" in seen["conflict"]
    assert seen["show_after_unlock"] == []
    assert seen["count"] == 2


def test_the_wheel_carries_a_jar_per_spark_line_the_sources_and_the_license():
    with zipfile.ZipFile(wheel_env.wheel()) as z:
        names = set(z.namelist())
        lines = z.read("sparklock/shim/jars/lines.txt").decode().split()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        description = z.read(meta).decode()
        entry_points = z.read(meta.replace("METADATA", "entry_points.txt")).decode()
    assert lines == list(prebuilt.LINES)
    for line in lines:
        assert f"sparklock/shim/jars/{prebuilt.jar_name(line)}" in names
    assert "sparklock/shim/src/main/java/io/sparklock/shim/SparkLockBridge.java" in names
    # Delta's part: one jar for every line, and its sources
    assert "sparklock/shim/jars/sparklock-delta.jar" in names
    assert "sparklock/shim/src/delta/java/io/sparklock/shim/delta/LeaseLogStore.java" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in description and len(description.splitlines()) < 80
    assert "sparklock = sparklock.cli:main" in entry_points  # the console script


def test_the_console_script_answers_from_the_installed_wheel(installed):
    venv, env, workdir = installed
    cmd = [str(venv / "bin" / "sparklock"), "--help"]
    proc = subprocess.run(cmd, env=env, cwd=workdir, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: sparklock ") and "thriftserver" in proc.stdout


def test_the_installed_wheel_runs_on_a_java_runtime_without_javac(installed):
    venv, env, workdir = installed
    assert subprocess.run(["which", "javac"], env=env, capture_output=True).returncode != 0
    site = next((venv / "lib").glob("python3*/site-packages")) / "sparklock"
    before = sorted(p for p in site.rglob("*") if "__pycache__" not in p.parts)
    seen = _smoke([str(venv / "bin" / "python"), "smoke.py", "t_python"], env, workdir)
    _check(seen, venv, "t_python")
    # Nothing compiled, nothing written beside the install: the packaged jar served.
    assert not (workdir / "xdg-cache" / "sparklock" / "shim").exists()
    assert sorted(p for p in site.rglob("*") if "__pycache__" not in p.parts) == before


def test_spark_submit_needs_no_flags(installed):
    venv, env, workdir = installed
    cmd = [str(venv / "bin" / "spark-submit"), "--master", "local[2]", "smoke.py", "t_submit"]
    _check(_smoke(cmd, env, workdir), venv, "t_submit")


@pytest.mark.skipif(not NEWEST, reason="CI time: the newest line's run starts the Thrift server")
def test_the_thrift_server_starts_and_stops_from_the_wheel(installed):
    venv, env, workdir = installed
    port = free_port()
    cmd = [str(venv / "bin" / "python"), "-m", "sparklock", "thriftserver", "--port", str(port)]
    cmd += ["--conf", "spark.ui.enabled=false"]
    ready = ""
    with open(workdir / "thrift.log", "w") as log:
        proc = subprocess.Popen(
            cmd, env=env, cwd=workdir, stdout=subprocess.PIPE, stderr=log, text=True
        )
        try:
            for line in proc.stdout:  # type: ignore[union-attr] - ends if the server dies
                if " ready: " in line:
                    ready = line
                    break
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(120)
    assert f":{port}" in ready, (workdir / "thrift.log").read_text()[-3000:]
    assert code == 0


@pytest.mark.skipif(not NEWEST, reason="CI time: the newest line's run uses the standalone cluster")
def test_the_smoke_on_a_standalone_master_and_worker_whose_executors_lack_sparklock(installed):
    venv, env, workdir = installed
    executor_python = wheel_env.bare_venv() / "bin" / "python"
    cluster = StandaloneCluster(venv, env, workdir).start()
    try:
        cmd = [str(venv / "bin" / "spark-submit"), "--master", cluster.url]
        cmd += ["--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false"]
        cmd += ["--conf", f"spark.pyspark.python={executor_python}"]
        cmd += ["--conf", f"spark.pyspark.driver.python={venv / 'bin' / 'python'}"]
        seen = _smoke([*cmd, "smoke.py", "t_cluster", "--executor-check"], env, workdir)
    finally:
        cluster.stop()
    _check(seen, venv, "t_cluster")
    assert seen["executors_import_sparklock"] == [False, False]


# The oldest and newest lines are checked by their own runs' smokes above; the lines of .ci/run's
# Iceberg and Delta runs start the same sources' jar for their line in each of their sessions.
LINES_CI_RUNS = {"4.1", "4.2"}
ALL_LINES = os.environ.get("SPARKLOCK_WHEEL_ALL_LINES", "false") == "true"
MIDDLE_LINES = [x for x in list(prebuilt.LINES)[1:-1] if ALL_LINES or x not in LINES_CI_RUNS]


@pytest.mark.skipif(not NEWEST, reason="CI time: the newest line's run checks the middle lines")
@pytest.mark.parametrize("line", MIDDLE_LINES)
def test_each_packaged_jar_answers_in_its_own_spark_line(line, tmp_path):
    # the line's venv is made on first use and cached (~/.cache/sparklock/wheel-venvs)
    venv = wheel_env.venv(prebuilt.LINES[line], wheel_env.wheel())
    (tmp_path / "smoke.py").write_text(SMOKE.read_text())
    env = wheel_env.user_env(venv, wheel_env.java_runtime(), tmp_path)
    seen = _smoke([str(venv / "bin" / "python"), "smoke.py", "t_line"], env, tmp_path)
    _check(seen, venv, "t_line", line)
