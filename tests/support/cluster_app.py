"""One of two spark-submit applications sharing a ZooKeeper on a standalone cluster
(``tests/support/cluster_demo.py``). Copied out of the checkout and run by an installed wheel.

    spark-submit --master spark://... cluster_app.py holder|other TABLE_DIR QUORUM SIGNAL_DIR

``holder`` runs an INSERT whose one task sleeps ten minutes (it holds EXCLUSIVE on
``default@shared`` until its driver is killed). ``other`` waits to see that lock in SHOW LOCKS,
finds its own INSERT and SELECT excluded, then (after writing ``SIGNAL_DIR/ready``) waits in line
for the lock, which comes once the holder's driver is gone and its ZooKeeper session expires.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

import sparklock

SLEEPING_INSERT = (
    "INSERT INTO shared SELECT CAST(reflect('java.lang.Thread', 'sleep', "
    "CAST(600000 AS BIGINT)) IS NULL AS INT)"
)


def say(role: str, text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {role}: {text}", flush=True)


def conflict_line(e: Exception) -> str:
    lines = str(e).splitlines()
    return next((x.strip(" :") for x in lines if "LOCK_CONFLICT" in x), lines[0])


def main(role: str, table_dir: str, quorum: str, signals: str) -> None:
    builder = SparkSession.builder.appName(f"sparklock-{role}")
    for key, value in {
        "spark.sparklock.manager": "zookeeper",
        "spark.sparklock.zookeeper.quorum": quorum,
        "spark.sparklock.zookeeper.sessionTimeout": "4s",
        "spark.cores.max": "1",
        "spark.executor.memory": "512m",
        "spark.ui.enabled": "false",
    }.items():
        builder = builder.config(key, value)
    spark = sparklock.configure(builder).getOrCreate()
    spark.sql(f"CREATE TABLE IF NOT EXISTS shared (a INT) USING parquet LOCATION '{table_dir}'")
    say(role, f"session up (application {spark.sparkContext.applicationId})")
    if role == "holder":
        say(role, SLEEPING_INSERT)
        spark.sql(SLEEPING_INSERT)
        return
    while True:  # the holder's INSERT (not its CREATE TABLE) holds the table
        rows = spark.sql("SHOW LOCKS EXTENDED").collect()
        if any(r["query_string"].startswith("INSERT") for r in rows):
            break
        time.sleep(0.5)
    for row in rows:
        say(role, "SHOW LOCKS EXTENDED: " + ", ".join(f"{k}={v}" for k, v in row.asDict().items()))
    spark.conf.set("spark.sparklock.lock.numRetries", "1")
    for sql in ("INSERT INTO shared VALUES (2)", "SELECT count(*) FROM shared"):
        try:
            spark.sql(sql).collect()
            say(role, f"{sql}: ran (not excluded!)")
        except Exception as e:  # noqa: BLE001 - the conflict is what is shown
            say(role, f"{sql}: {conflict_line(e)}")
    spark.conf.set("spark.sparklock.lock.numRetries", "300")
    spark.conf.set("spark.sparklock.lock.retryInterval", "1s")
    say(role, "INSERT INTO shared VALUES (3): waiting in line")
    (Path(signals) / "ready").touch()
    start = time.monotonic()
    spark.sql("INSERT INTO shared VALUES (3)")
    say(role, f"INSERT INTO shared VALUES (3): done after {time.monotonic() - start:.1f} s")
    say(role, f"SHOW LOCKS now: {[tuple(r) for r in spark.sql('SHOW LOCKS').collect()]}")
    say(role, f"rows in shared: {spark.table('shared').collect()}")
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
