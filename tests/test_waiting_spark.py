"""SHOW LOCKS EXTENDED shows who waits for whom, in real Spark: from another session of the same
driver (embedded and ZooKeeper managers) and from another driver process (ZooKeeper), under
both wait policies; and no WAITING row once the wait ended (grant, cancellation, refusal).
"""

from __future__ import annotations

import threading
import uuid

import pytest
from pyspark.sql import SparkSession  # noqa: E402

from tests.support.driver import Driver  # noqa: E402
from tests.support.locks import wait_for  # noqa: E402
from tests.support.sessions import conf_for_manager, new_session  # noqa: E402
from tests.support.show_locks_columns import EXTENDED  # noqa: E402
from tests.support.spark import SparkSpec, zookeeper_conf  # noqa: E402

pytestmark = [
    pytest.mark.spark,
    pytest.mark.zookeeper,
    pytest.mark.usefixtures("unlock_leftover_locks"),
]

SPARK = SparkSpec(
    app="waiting",
    setup_sql=["CREATE TABLE t (a INT) USING parquet", "INSERT INTO t VALUES (0)"],
)
#: a budget that outlasts every test (30 s), cut short by the test; polled every 100 ms (retry)
PATIENT = {"spark.sparklock.lock.numRetries": "300", "spark.sparklock.lock.retryInterval": "100ms"}
#: a budget that runs out while the test watches (LOCK_CONFLICT after 2 s)
SHORT = {"spark.sparklock.lock.numRetries": "20", "spark.sparklock.lock.retryInterval": "100ms"}


def extended(s: SparkSession, target: str = "t") -> list[dict[str, str]]:
    return [r.asDict() for r in s.sql(f"SHOW LOCKS {target} EXTENDED").collect()]


def waiting(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [r for r in rows if r["state"] == "WAITING"]


class Statement:
    """A statement run on a thread (its session's job group set), its error text if it failed."""

    def __init__(self, s: SparkSession, sql: str, group: str) -> None:
        self.error: str | None = None
        self.done = threading.Event()

        def run() -> None:
            try:
                s.sparkContext.setJobGroup(group, "waits for a lock")
                s.sql(sql).collect()
            except Exception as e:  # noqa: BLE001 - the test reads it
                self.error = str(e)
            finally:
                self.done.set()

        threading.Thread(target=run, daemon=True).start()

    def wait(self, timeout: float = 60.0) -> str | None:
        assert self.done.wait(timeout), "the statement never ended"
        return self.error


@pytest.fixture(params=["embedded", "zookeeper"])
def manager_conf(request) -> dict[str, str]:
    zk_address = lambda: request.getfixturevalue("zk_server").address  # noqa: E731
    return conf_for_manager(request.param, zk_address, "sparklock_waiting_")


@pytest.mark.parametrize("policy", ["queue", "retry"])
@pytest.mark.parametrize("ending", ["grant", "cancel", "refusal"])
def test_another_session_sees_the_waiter_until_its_wait_ends(spark, manager_conf, policy, ending):
    common = {**manager_conf, "spark.sparklock.lock.waitPolicy": policy}
    holder = new_session(spark, common)
    waiter = new_session(spark, {**common, **(SHORT if ending == "refusal" else PATIENT)})
    observer = new_session(spark, common)
    holder.sql("LOCK TABLE t EXCLUSIVE")
    [lock] = extended(observer)
    group = f"wait-{uuid.uuid4().hex[:6]}"
    insert = Statement(waiter, "INSERT INTO t VALUES (1)", group)
    assert wait_for(lambda: waiting(extended(observer)), 20), extended(observer)
    [row] = waiting(extended(observer))
    assert (row["name"], row["mode"], row["lock_type"]) == ("default@t", "EXCLUSIVE", "IMPLICIT")
    assert row["blocked_by"] == f"EXCLUSIVE default@t query_id={lock['query_id']}"
    assert row["query_string"] == "INSERT INTO t VALUES (1)"
    assert row["acquired_at"] == "" and row["wait_since"].isdigit()
    assert row["user"] == spark.sparkContext.sparkUser()
    assert row["agent"] == spark.sparkContext.applicationId
    assert lock["state"] == "ACQUIRED" and lock["acquired_at"] == lock["lock_time"]
    # the short form has the state too
    assert ("default@t", "EXCLUSIVE", "WAITING") in [
        tuple(r) for r in observer.sql("SHOW LOCKS t").collect()
    ]

    if ending == "grant":
        holder.sql("UNLOCK TABLE t")
        assert insert.wait() is None
    elif ending == "cancel":
        spark.sparkContext.cancelJobGroup(group)
        assert "LOCK_WAIT_CANCELLED" in (insert.wait() or "")
    else:
        assert "LOCK_CONFLICT" in (insert.wait() or "")
    assert waiting(extended(observer)) == []
    assert waiting(extended(observer, "DATABASE default")) == []
    if ending != "grant":
        holder.sql("UNLOCK TABLE t")
    assert extended(observer) == []


# -- across drivers (ZooKeeper) ---------------------------------------------------------------
@pytest.fixture(scope="module")
def other_driver(tmp_path_factory, zk_server):
    d = Driver(
        zk_server.address,
        "sparklock_waiting_driver",
        str(tmp_path_factory.mktemp("waiting-driver")),
    )
    assert d.sql("CREATE TABLE t (a INT) USING parquet")["ok"]
    yield d
    d.close()


def driver_rows(driver: Driver, sql: str = "SHOW LOCKS t EXTENDED") -> list[dict[str, str]]:
    answer = driver.sql(sql)
    assert answer["ok"], answer
    # the driver answers values only: named by SHOW LOCKS EXTENDED's columns
    return [dict(zip(EXTENDED, r, strict=True)) for r in answer["rows"]]


@pytest.mark.parametrize("policy", ["queue", "retry"])
def test_another_driver_sees_the_waiter(spark, other_driver, zk_server, policy):
    namespace = f"sparklock_waiting_{uuid.uuid4().hex[:8]}"
    conf = {
        **zookeeper_conf(zk_server.address, namespace),
        "spark.sparklock.lock.waitPolicy": policy,
    }
    for k, v in conf.items():
        assert other_driver.sql(f"SET {k}={v}")["ok"]
    assert other_driver.sql("LOCK TABLE t EXCLUSIVE")["ok"]
    [lock] = driver_rows(other_driver)
    waiter = new_session(spark, {**conf, **PATIENT})
    insert = Statement(waiter, "INSERT INTO t VALUES (2)", f"wait-{uuid.uuid4().hex[:6]}")
    assert wait_for(lambda: waiting(driver_rows(other_driver)), 20), driver_rows(other_driver)
    [row] = waiting(driver_rows(other_driver))
    assert row["blocked_by"] == f"EXCLUSIVE default@t query_id={lock['query_id']}"
    assert row["agent"] == spark.sparkContext.applicationId != lock["agent"]
    assert row["acquired_at"] == "" and row["wait_since"].isdigit()
    # ... and this driver sees the other's lock as the one in the way
    assert [r["state"] for r in extended(waiter) if r["query_id"] == lock["query_id"]] == [
        "ACQUIRED"
    ]
    assert other_driver.sql("UNLOCK TABLE t")["ok"]
    assert insert.wait() is None
    assert waiting(driver_rows(other_driver)) == []
    assert driver_rows(other_driver) == []
