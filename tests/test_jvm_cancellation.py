"""Cancellations made from JVM code, which no PySpark hook sees (issue 15 gap): a job group
cancelled with its future jobs (``SparkContext.cancelJobGroupAndFutureJobs``, Spark 4.0+, called
here on the JVM SparkContext exactly as Scala code would) ends its statements' lock waits at once;
a plain JVM ``cancelJobGroup`` leaves no record in Spark, and the wait goes on (documented)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from sparklock.service import get_service
from tests.support.locks import wait_for
from tests.support.spark import SparkSpec
from tests.support.spark_versions import needs_spark

pytestmark = [
    pytest.mark.spark,
    needs_spark((4, 0), "SparkContext.cancelJobGroupAndFutureJobs (Spark 4.0+)"),
]

SPARK = SparkSpec(
    app="jvm_cancellation",
    setup_sql=("CREATE TABLE jc (k INT) USING parquet", "INSERT INTO jc VALUES (1)"),
)


def waiting_in_group(spark, statement: str, group: str) -> tuple[threading.Thread, dict]:
    """``statement`` run on a thread whose job group is ``group``; box gets 'error'/'elapsed'."""
    box: dict = {}
    sc = spark.sparkContext

    def run() -> None:
        sc.setJobGroup(group, "waits")
        start = time.monotonic()
        try:
            spark.sql(statement).collect()
            box["ok"] = True
        except Exception as e:  # noqa: BLE001 - inspected by the test
            box["error"] = str(e)
        finally:
            box["elapsed"] = time.monotonic() - start
            sc.setLocalProperty("spark.jobGroup.id", None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


@pytest.fixture
def holder(spark):
    """Another session holding EXCLUSIVE on jc; the test's session waits up to 60 s for it."""
    other = spark.newSession()
    other.sql("LOCK TABLE jc EXCLUSIVE")
    spark.conf.set("spark.sparklock.lock.numRetries", "60")
    spark.conf.set("spark.sparklock.lock.retryInterval", "1s")
    yield other
    spark.conf.unset("spark.sparklock.lock.numRetries")
    spark.conf.unset("spark.sparklock.lock.retryInterval")
    other.sql("UNLOCK TABLE jc")
    assert get_service().waiting() == 0 and get_service().open_handles() == 0


@pytest.mark.parametrize("statement", ["SELECT count(*) FROM jc", "LOCK TABLE jc SHARED"])
def test_jvm_cancel_job_group_and_future_jobs_ends_the_wait(spark, holder, statement):
    group = f"jvm-{uuid.uuid4().hex[:8]}"
    jsc = spark.sparkContext._jsc.sc()  # the JVM SparkContext: what Scala code calls
    svc = get_service()
    thread, box = waiting_in_group(spark, statement, group)
    assert wait_for(lambda: svc.waiting() == 1, 20)
    jsc.cancelJobGroupAndFutureJobs(f"other-{group}")  # another group: the wait goes on
    time.sleep(1.0)
    assert svc.waiting() == 1 and thread.is_alive()
    jsc.cancelJobGroupAndFutureJobs(group)
    thread.join(20)
    assert not thread.is_alive()
    error = box.get("error", "")
    assert "LOCK_WAIT_CANCELLED: cancelled by SparkContext.cancelJobGroupAndFutureJobs" in error
    assert group in error and box["elapsed"] < 20  # at once, not at the 60 s budget


def test_plain_jvm_cancel_job_group_leaves_the_wait_to_its_budget(spark, holder):
    """What Spark itself does: a plain cancelJobGroup cancels the group's *active* jobs only and
    records nothing, so a statement with no job yet goes on (in Spark as here)."""
    group = f"jvm-{uuid.uuid4().hex[:8]}"
    spark.conf.set("spark.sparklock.lock.numRetries", "4")  # a 4 s budget
    svc = get_service()
    thread, box = waiting_in_group(spark, "SELECT count(*) FROM jc", group)
    assert wait_for(lambda: svc.waiting() == 1, 20)
    spark.sparkContext._jsc.sc().cancelJobGroup(group)
    thread.join(30)
    assert "LOCK_CONFLICT" in box.get("error", ""), box
