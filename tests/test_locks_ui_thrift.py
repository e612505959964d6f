"""The Locks tab of a sparklock Thrift server, read by a real headless browser: one row per JDBC
session, the waiting session's statement and the session it waits behind, each named by its
user (real beeline clients, the server's own UI on a free port of 127.0.0.1)."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import chromium, page_shows, screenshot
from tests.support.servers import ServerProcess, beeline, beeline_background, wait_until
from tests.support.spark_ui import get
from tests.support.zookeeper import free_port

pytestmark = [pytest.mark.spark, pytest.mark.browser]

#: alice's session keeps its LOCK TABLE while this sleeps (on an executor thread: no CPU burnt)
HOLD = (
    "LOCK TABLE t EXCLUSIVE; "
    "SELECT reflect('java.lang.Thread', 'sleep', CAST(40000 AS BIGINT)) FROM range(1)"
)


def test_one_row_per_jdbc_session_and_whom_the_waiter_waits_for(tmp_path):
    ui_port = free_port()
    server = ServerProcess(
        "thriftserver",
        {
            "spark.ui.enabled": "true",
            "spark.ui.port": str(ui_port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.sparklock.lock.retryInterval": "200ms",  # budget 100 x 200ms = 20 s
        },
        tmp_path,
    )
    clients = []
    try:
        server.wait_ready()
        made = beeline(server.port, "admin", "CREATE TABLE t (a INT) USING parquet")
        assert made.returncode == 0, made.stdout + made.stderr
        ui = f"http://127.0.0.1:{ui_port}"

        def snapshot() -> dict:
            return json.loads(get(ui, "/locks/json/"))

        clients.append(beeline_background(server.port, "alice", HOLD))
        wait_until(lambda: [h["user"] for h in snapshot()["held"]] == ["alice"], 60)
        clients.append(beeline_background(server.port, "bob", "SELECT count(*) FROM t"))
        wait_until(lambda: [w["user"] for w in snapshot()["waiting"]] == ["bob"], 60)

        snap = snapshot()
        sessions = {s["user"]: s for s in snap["sessions"]}
        assert sorted(sessions) == ["alice", "bob"], snap["sessions"]
        assert (sessions["alice"]["held"], sessions["bob"]["waiting"]) == (1, 1)
        assert sessions["alice"]["owner"] != sessions["bob"]["owner"]
        [(waiting)] = snap["waiting"]
        assert (waiting["object"], waiting["mode"]) == ("default@t", "SHARED")
        [edge] = snap["edges"]
        assert edge["holder"] == sessions["alice"]["owner"], edge

        with chromium(tmp_path / "chromium-profile") as browser:
            from selenium.webdriver.common.by import By

            url = f"{ui}/locks/"
            assert page_shows(browser, url, "#sl-waiting", "default@t")()
            rows = browser.find_element(By.CSS_SELECTOR, "#sl-sessions").text
            assert "alice" in rows and "bob" in rows, rows
            assert len(browser.find_elements(By.CSS_SELECTOR, "#sl-graph g.sl-edge")) == 1
            screenshot(browser, tmp_path, "locks-tab-thrift.png")
    finally:
        for client in clients:
            client.kill()
            client.wait(30)
        server.terminate()
