"""dbt against ``python -m sparklock thriftserver``, as a dbt user runs it: dbt-core with
dbt-spark's ``thrift`` method (PyHive), a session per model, connections opened and closed all
the time. The project (``tests/dbt_project``) has a seed, a table model, an incremental append
model, an incremental ``insert_overwrite`` model on a partitioned table, a downstream table model
and data tests.

1. ``seed``, ``run``, ``run``, ``test`` pass against one server (every model built twice: created,
   then incrementally updated), and the incremental models hold what their strategies promise.
2. Another user (PyHive) holds ``LOCK TABLE`` on a model's target: ``dbt run`` fails that model
   with ``LOCK_CONFLICT`` in its output (within the wait set by the profile's
   ``set:hiveconf:spark.sparklock.lock.*`` parameters), the table keeps its rows, the downstream
   model is skipped and the others succeed; after ``UNLOCK`` a rerun passes.
3. The hook pattern: a model whose pre-hook ran ``LOCK TABLE`` and that then fails never runs
   its ``UNLOCK`` post-hook; the lock outlives dbt's session under ``explicit.onSessionClose=keep``
   (Hive's behaviour) and goes with it under ``release``.
4. The same keys reach a JDBC session from the URL (``;?k=v``, ``#k=v``) and beeline's
   ``--hiveconf`` (the other forms the Servers page documents).

dbt lives in a venv of its own (``tests/support/dbt_env.py``: its pins clash with the Connect
client's). It runs once, on the newest Spark line (marker ``dbt``, taken by CI's whole-suite run,
not by the 3.5 run): what it exercises beyond the reconnect tests (``test_server_reconnect.py``,
every line) is dbt's SQL, which does not depend on the Spark line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.dbt_env import dbt_executable
from tests.support.servers import BEELINE, ServerProcess, rows, wait_until
from tests.support.zookeeper import CLASSPATH

PROJECT = Path(__file__).with_name("dbt_project")
SEED_ROWS = 4  # tests/dbt_project/seeds/people.csv
SCHEMA = "dbt_sl"  # tests/dbt_project/profiles.yml
SUMMARY = re.compile(r"\d of \d|LOCK_CONFLICT|Done\.")  # dbt's lines worth printing

pytestmark = pytest.mark.dbt


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("dbt-server")
    srv = ServerProcess("thriftserver", {"spark.ui.enabled": "false"}, workdir)
    try:
        srv.wait_ready()
        yield srv
    finally:
        assert srv.terminate() == 0, srv.log_tail()


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A copy of the project: dbt writes target/ and logs/ beside it."""
    root = tmp_path_factory.mktemp("dbt") / "project"
    shutil.copytree(PROJECT, root)
    return root


def dbt(project: Path, port: int, *args: str, retries: int | None = None, on_close: str = "keep"):
    """``dbt ARGS`` in the project; (exit code, output, {model or test name: status})."""
    env = {
        **os.environ,
        "SPARKLOCK_DBT_PORT": str(port),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DBT_VERSION_CHECK": "false",
        "NO_COLOR": "1",
        "SPARKLOCK_DBT_ON_CLOSE": on_close,
    }
    if retries is not None:
        env["SPARKLOCK_DBT_RETRIES"] = str(retries)
    proc = subprocess.run(
        [str(dbt_executable()), *args, "--profiles-dir", str(project)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    statuses = {r["unique_id"].split(".")[-1]: r["status"] for r in results}
    return proc.returncode, proc.stdout + proc.stderr, statuses


def connect(port: int, user: str):
    hive = pytest.importorskip("pyhive.hive", reason="PyHive comes with the dev extra (.[dev])")
    return hive.connect(host="127.0.0.1", port=port, username=user, database="default")


def scalar(conn, sql: str):
    cursor = conn.cursor()
    cursor.execute(sql)
    [(value,)] = cursor.fetchall()
    return value


def test_seed_run_run_test(server, project):
    rc, out, seeded = dbt(project, server.port, "seed")
    assert rc == 0 and seeded == {"people": "success"}, out
    for _ in (1, 2):
        rc, out, ran = dbt(project, server.port, "run")
        assert rc == 0, out
        assert set(ran.values()) == {"success"} and len(ran) == 5, ran
    rc, out, tested = dbt(project, server.port, "test")
    assert rc == 0 and len(tested) == 5 and set(tested.values()) == {"pass"}, out
    conn = connect(server.port, "checker")
    try:
        # append added the seed once per run; insert_overwrite replaced only its partitions
        assert scalar(conn, f"SELECT count(*) FROM {SCHEMA}.people_appended") == SEED_ROWS * 2
        assert scalar(conn, f"SELECT count(*) FROM {SCHEMA}.people_by_region") == SEED_ROWS
        parts = f"SELECT count(DISTINCT region) FROM {SCHEMA}.people_by_region"
        assert scalar(conn, parts) == 3
    finally:
        conn.close()


def test_conflict_fails_the_model_keeps_the_table_skips_downstream(server, project):
    holder = connect(server.port, "other")
    try:
        tables = holder.cursor()
        tables.execute(f"SHOW TABLES IN {SCHEMA} LIKE 'people_table'")
        if not tables.fetchall():  # this test alone: build the project first
            assert dbt(project, server.port, "seed")[0] == 0
            assert dbt(project, server.port, "run")[0] == 0
        holder.cursor().execute(f"LOCK TABLE {SCHEMA}.people_table EXCLUSIVE")
        rc, out, ran = dbt(project, server.port, "run", retries=3)
        print("\n".join(ln for ln in out.splitlines() if SUMMARY.search(ln)))
        assert rc == 1
        assert ran == {
            "people_appended": "success",
            "people_by_region": "success",
            "people_hooked": "success",
            "people_table": "error",
            "region_counts": "skipped",
        }, out
        assert "LOCK_CONFLICT" in out and f"{SCHEMA}@people_table" in out, out
        assert "LOCK TABLE dbt_sl.people_table EXCLUSIVE" in out  # who holds it, and how
        # intact: the failed model dropped nothing (the holder's own lock lets it read)
        assert scalar(holder, f"SELECT count(*) FROM {SCHEMA}.people_table") == SEED_ROWS
        holder.cursor().execute(f"UNLOCK TABLE {SCHEMA}.people_table")
    finally:
        holder.close()
    rc, out, ran = dbt(project, server.port, "run", retries=3)
    assert rc == 0 and set(ran.values()) == {"success"} and len(ran) == 5, out


def seed_locks(conn) -> list[tuple]:
    cursor = conn.cursor()
    cursor.execute(f"SHOW LOCKS {SCHEMA}.people")
    return cursor.fetchall()


@pytest.mark.parametrize("on_close", ["keep", "release"])
def test_failed_model_keeps_its_hook_lock_unless_release(server, project, on_close):
    conn = connect(server.port, "checker")
    try:
        cursor = conn.cursor()
        cursor.execute(f"SHOW TABLES IN {SCHEMA} LIKE 'people'")
        if not cursor.fetchall():  # this test alone: seed first
            assert dbt(project, server.port, "seed")[0] == 0
        failing = ("--select", "people_hooked", "--vars", "{fail_hooked: true}")
        rc, out, ran = dbt(project, server.port, "run", *failing, on_close=on_close)
        assert rc == 1 and ran == {"people_hooked": "error"}, out
        if on_close == "release":  # released when dbt's session closed
            wait_until(lambda: seed_locks(conn) == [], timeout=30)
        else:  # still held after dbt exited: someone has to UNLOCK
            held = seed_locks(conn)
            assert len(held) == 1 and "SHARED" in held[0], held
            cursor.execute(f"UNLOCK TABLE {SCHEMA}.people")
            assert seed_locks(conn) == []
    finally:
        conn.close()


@pytest.mark.parametrize(
    "url_tail, extra",
    [
        # the URL's hiveconf list, two keys
        (";?spark.sparklock.lock.numRetries=7;spark.sparklock.lock.retryInterval=300ms", []),
        ("#spark.sparklock.lock.numRetries=7", []),  # the URL's hivevar list
        ("", ["--hiveconf", "spark.sparklock.lock.numRetries=7"]),  # beeline's option
    ],
    ids=["url-hiveconf", "url-hivevar", "beeline-hiveconf"],
)
def test_jdbc_url_and_beeline_set_sparklock_keys(server, url_tail, extra):
    """The other ways than dbt's profile to give a JDBC session sparklock's keys (docs: Servers)."""
    url = f"jdbc:hive2://127.0.0.1:{server.port}/default{url_tail}"
    cmd = ["java", "-cp", CLASSPATH, BEELINE, "-u", url, "-n", "jdbc", "--silent=true"]
    cmd += ["--outputformat=tsv2", "--showHeader=false", *extra]
    proc = subprocess.run(
        [*cmd, "-e", "SET spark.sparklock.lock.numRetries; SET spark.sparklock.lock.retryInterval"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert ["spark.sparklock.lock.numRetries", "7"] in rows(proc), proc.stdout
    if "retryInterval" in url_tail:
        assert ["spark.sparklock.lock.retryInterval", "300ms"] in rows(proc), proc.stdout


def test_pyhive_configuration_needs_the_hiveconf_prefix(server):
    """What dbt's ``server_side_parameters`` become: PyHive's session ``configuration``. Only the
    ``set:hiveconf:`` keys reach the Spark session (as on Spark's own Thrift server)."""
    hive = pytest.importorskip("pyhive.hive", reason="PyHive comes with the dev extra (.[dev])")
    conf = {
        "set:hiveconf:spark.sparklock.lock.numRetries": "7",
        "spark.sparklock.lock.retryInterval": "300ms",  # bare: not applied
    }
    conn = hive.connect(host="127.0.0.1", port=server.port, username="py", configuration=conf)
    try:
        cursor = conn.cursor()
        cursor.execute("SET spark.sparklock.lock.numRetries")
        assert cursor.fetchall() == [("spark.sparklock.lock.numRetries", "7")]
        cursor.execute("SET spark.sparklock.lock.retryInterval")
        assert cursor.fetchall() != [("spark.sparklock.lock.retryInterval", "300ms")]
    finally:
        conn.close()
