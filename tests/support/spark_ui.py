"""Reading what a test session shows through Spark's own channels: the driver UI's metrics
servlets and REST API, and the event log files (real HTTP, real files; no mocks)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Builder conf of a session whose UI, metrics servlets and event log the tests read (the UI on
#: a free port of 127.0.0.1; the event log uncompressed, so the test reads it as text).
UI_CONF = {
    "spark.ui.enabled": "true",
    "spark.ui.port": "0",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.prometheus.enabled": "true",
    "spark.metrics.conf.*.sink.prometheusServlet.class": (
        "org.apache.spark.metrics.sink.PrometheusServlet"
    ),
    "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus",
    "spark.eventLog.enabled": "true",
    "spark.eventLog.compress": "false",
}


def get(spark: SparkSession | str, path: str) -> str:
    """GET ``path`` of the driver UI (``sc.uiWebUrl``, or a UI's base URL)."""
    url = spark if isinstance(spark, str) else spark.sparkContext.uiWebUrl
    assert url, "the session runs without its UI"
    with urllib.request.urlopen(url.rstrip("/") + path, timeout=30) as answer:
        return answer.read().decode("utf-8")


def sparklock_metrics(spark: SparkSession | str) -> dict[str, Any]:
    """``/metrics/json/``'s ``sparklock`` source, by metric name: a counter's count, a gauge's
    value, a timer's whole object (``count``, ``max`` in milliseconds, ...)."""
    data = json.loads(get(spark, "/metrics/json/"))
    marker = ".driver.sparklock."
    out: dict[str, Any] = {}
    for section in ("counters", "gauges", "timers"):
        for name, value in data.get(section, {}).items():
            if marker in name:
                short = name.split(marker, 1)[1]
                if section == "counters":
                    out[short] = value["count"]
                elif section == "gauges":
                    out[short] = value["value"]
                else:
                    out[short] = value
    return out


def sql_executions(spark: SparkSession) -> list[dict]:
    """The REST API's SQL executions of the application, with their plan nodes' metrics.

    All of them: the endpoint returns only the first 20 unless asked for more, and a module's
    shared session has run more than that by the time its later tests look."""
    app = spark.sparkContext.applicationId
    query = "details=true&planDescription=false&offset=0&length=1000000"
    return json.loads(get(spark, f"/api/v1/applications/{app}/sql?{query}"))


def event_log_lines(directory: Path | str, spark: SparkSession) -> list[dict]:
    """Every event the application's event log holds so far (a single file or a rolling
    ``eventlog_v2_*`` directory; ``.inprogress`` while it runs)."""
    app = spark.sparkContext.applicationId
    events = []
    for path in sorted(Path(directory).rglob("*")):
        if path.is_file() and app in str(path):
            for line in path.read_text("utf-8").splitlines():
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # the line Spark is writing right now
    return events
