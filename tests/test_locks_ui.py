"""The Spark UI's Locks tab, read by a real headless browser (Debian's Chromium with its
WebDriver, driven by Selenium) from a live driver UI on a free port of 127.0.0.1.

One session holds ``LOCK TABLE t EXCLUSIVE`` while another session's SELECT waits in a thread:
the tab must show the waiting statement within a second of its wait, name its holder, and draw
the wait in the graph; then two sessions lock ``a`` and ``b`` crosswise and the cycle is drawn.
Screenshots go to the test's tmp dir, and to ``docs/images/`` with
``SPARKLOCK_UPDATE_SCREENSHOTS=1``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import sparklock
from sparklock.service import get_service
from tests.support.browser import chromium, page_shows, screenshot
from tests.support.spark import SparkSpec
from tests.support.spark_ui import UI_CONF, get

pytestmark = [pytest.mark.spark, pytest.mark.browser]

#: Only the UI: the event log and the metrics servlets of UI_CONF are other tests' business.
UI_ONLY = {k: v for k, v in UI_CONF.items() if k.startswith(("spark.ui.", "spark.driver."))}

SPARK = SparkSpec(
    app="locks_ui",
    conf={**UI_ONLY, "spark.ui.prometheus.enabled": "false"},
    session_conf={"spark.sparklock.lock.numRetries": "60"},
    setup_sql=(
        "CREATE TABLE t (k INT) USING parquet",
        "INSERT INTO t VALUES (1), (2)",
        "CREATE TABLE a (k INT) USING parquet",
        "CREATE TABLE b (k INT) USING parquet",
    ),
)


@pytest.fixture(scope="module", autouse=True)
def ui_properties():
    """Set up before the module's session, torn down after it: the UI keys this module set go
    back out of the JVM's system properties (the first SparkContext of a JVM leaves its conf
    there, and later modules' sessions run without a UI)."""
    yield
    from pyspark import SparkContext

    if SparkContext._jvm is not None:
        for key in SPARK.conf:
            SparkContext._jvm.java.lang.System.clearProperty(key)


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator:
    """One headless Chromium for the module, with a fresh profile."""
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


def locks_url(spark) -> str:
    url = spark.sparkContext.uiWebUrl
    assert url, "the session runs without its UI"
    return url.rstrip("/") + "/locks/"


def in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Polls ``check`` until true; the seconds it took (fails after ``timeout``)."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            pytest.fail(f"not within {timeout} s: {what}")
        time.sleep(0.02)
    return time.monotonic() - start


def test_waiting_statement_and_its_holder(spark, browser, tmp_path):
    from selenium.webdriver.common.by import By

    url = locks_url(spark)
    browser.get(url)  # the tab is there, in Spark's navigation bar, before anything waits
    assert browser.find_element(By.CSS_SELECTOR, "nav li.active").text == "Locks"
    assert "Nothing waits for a lock." in browser.page_source
    started = time.monotonic()
    browser.get(url)
    print(f"one load of the Locks tab: {time.monotonic() - started:.3f} s")

    holder, waiter = spark.newSession(), spark.newSession()
    holder_id = str(holder._jsparkSession.sessionUUID())
    holder.sql("LOCK TABLE t EXCLUSIVE")
    try:
        thread, box = in_thread(lambda: waiter.sql("SELECT count(*) FROM t").collect())
        wait_until(lambda: get_service().waiting() > 0, 30, "the SELECT starts waiting")
        seen = wait_until(
            page_shows(browser, url, "#sl-waiting", "default@t"), 20, "the wait on the page"
        )
        print(f"waiting statement on the page {seen:.3f} s after its wait began")
        waiting = browser.find_element(By.CSS_SELECTOR, "#sl-waiting").text
        assert "SHARED" in waiting and "EXCLUSIVE on default@t held by" in waiting
        holders = browser.find_element(By.CSS_SELECTOR, "#sl-blockers").text
        assert f"session {holder_id[:8]}" in holders and "LOCK TABLE t EXCLUSIVE" in holders
        edges = browser.find_elements(By.CSS_SELECTOR, "#sl-graph g.sl-edge")
        assert len(edges) == 1 and "default@t" in edges[0].text
        screenshot(browser, tmp_path, "locks-tab.png")

        snap = json.loads(get(spark.sparkContext.uiWebUrl, "/locks/json/"))
        assert snap["ok"] and [w["object"] for w in snap["waiting"]] == ["default@t"]
        assert snap["edges"][0]["holder"] == holder_id and snap["deadlocks"] == []
    finally:
        holder.sql("UNLOCK TABLE t")
    thread.join(60)
    assert box.get("result") == [(2,)], box
    wait_until(page_shows(browser, url, "#sl-recent", "GRANTED"), 10, "the ended wait listed")
    assert "Nothing waits for a lock." in browser.page_source


def test_crossing_lock_tables_are_drawn(spark, browser, tmp_path):
    from selenium.webdriver.common.by import By

    url = locks_url(spark)
    first, second = spark.newSession(), spark.newSession()
    first.sql("LOCK TABLE a EXCLUSIVE")
    second.sql("LOCK TABLE b EXCLUSIVE")
    detects = hasattr(sparklock, "DeadlockError")  # deadlock detection fails one of them
    try:
        t1, box1 = in_thread(lambda: first.sql("LOCK TABLE b EXCLUSIVE"))
        wait_until(lambda: get_service().waiting() > 0, 30, "the first LOCK waits")
        wait_until(page_shows(browser, url, "#sl-waiting", "default@b"), 5, "the first wait")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#sl-graph g.sl-edge")) == 1
        t2, box2 = in_thread(lambda: second.sql("LOCK TABLE a EXCLUSIVE"))
        if detects:  # the victim fails at once; the other waits on until the UNLOCK below
            wait_until(lambda: not (t1.is_alive() and t2.is_alive()), 30, "a victim fails")
            wait_until(page_shows(browser, url, "#sl-recent", "DEADLOCK"), 5, "the victim")
        else:
            wait_until(page_shows(browser, url, "#sl-graph", "Deadlock"), 5, "the cycle")
            red = browser.find_elements(By.CSS_SELECTOR, "#sl-graph g.sl-deadlock-edge")
            assert sorted(e.text.split()[1] for e in red) == ["default@a", "default@b"]
            snap = json.loads(get(spark.sparkContext.uiWebUrl, "/locks/json/"))
            (cycle,) = snap["deadlocks"]
            assert {e["object"] for e in cycle["edges"]} == {"default@a", "default@b"}
        screenshot(browser, tmp_path, "locks-tab-deadlock.png")
    finally:
        spark.sparkContext.cancelAllJobs()  # ends both LOCK waits (no-op once they ended)
        for t in ("a", "b"):
            for s in (first, second):
                try:
                    s.sql(f"UNLOCK TABLE {t}")
                except Exception:  # noqa: BLE001 - only the holder's UNLOCK finds a lock
                    pass
    t1.join(30)
    t2.join(30)
    assert not t1.is_alive() and not t2.is_alive()
