"""sparklock quickstart on the embedded (default) lock manager.

Shows, on a local Spark:
  1. the implicit locks of a running query in SHOW LOCKS;
  2. EXPLAIN LOCKS of an INSERT, without running it;
  3. a conflict: LOCK TABLE ... EXCLUSIVE in one session, an INSERT in another fails with
     LOCK_CONFLICT naming the holder;
  4. a writer waiting for a reader, then running as soon as the reader is done.

Run: python3 examples/quickstart.py
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time

from pyspark.sql import SparkSession

import sparklock


def slow_identity(x: int) -> int:
    time.sleep(0.4)
    return x


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    warehouse = tempfile.mkdtemp(prefix="sparklock-quickstart-")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("sparklock-quickstart")
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    spark = sparklock.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.udf.register("slow_identity", slow_identity, "int")

    spark.sql(
        "CREATE TABLE sales (id INT, amount DOUBLE, ds STRING) USING parquet PARTITIONED BY (ds)"
    )
    spark.sql("INSERT INTO sales PARTITION (ds='2026-11-20') VALUES (1, 10.0), (2, 20.0)")
    spark.sql("INSERT INTO sales PARTITION (ds='2026-11-21') VALUES (3, 30.0)")

    print("\n== 1. implicit locks of a running query (seen from another thread) ==")
    reader = threading.Thread(
        target=lambda: spark.sql(
            "SELECT sum(slow_identity(id)) FROM sales WHERE ds = '2026-11-20'"
        ).collect()
    )
    reader.start()
    deadline = time.monotonic() + 30
    locks = spark.sql("SHOW LOCKS EXTENDED")
    while not locks.count() and time.monotonic() < deadline:  # wait for the query to start
        time.sleep(0.05)
        locks = spark.sql("SHOW LOCKS EXTENDED")
    locks.select("name", "mode", "lock_type", "query_string").show(truncate=60)
    reader.join()
    print("after the query:", spark.sql("SHOW LOCKS").collect())

    print("\n== 2. EXPLAIN LOCKS: what an INSERT would lock, without running it ==")
    spark.sql(
        "EXPLAIN LOCKS INSERT INTO sales PARTITION (ds='2026-11-22') SELECT id, amount FROM sales"
    ).show(truncate=False)

    print("== 3. a conflict: LOCK TABLE in one session, INSERT in another ==")
    admin = spark.newSession()
    admin.sql("LOCK TABLE sales EXCLUSIVE")
    spark.conf.set("spark.sparklock.lock.numRetries", "3")
    spark.conf.set("spark.sparklock.lock.retryInterval", "100ms")
    try:
        spark.sql("INSERT INTO sales PARTITION (ds='2026-11-22') VALUES (4, 40.0)")
    except sparklock.LockConflictError as err:  # a pyspark.errors.PySparkException too
        print("refused:", err.getCondition(), err.getSqlState())
        for holder in err.holders:
            print(f"  held: {holder.mode} {holder.object} by {holder.user} ({holder.query!r})")
    admin.sql("UNLOCK TABLE sales")
    spark.conf.unset("spark.sparklock.lock.numRetries")
    spark.conf.unset("spark.sparklock.lock.retryInterval")

    print("\n== 4. a writer waits for a reader ==")
    t0 = time.monotonic()
    reader = threading.Thread(
        target=lambda: spark.sql("SELECT sum(slow_identity(id)) FROM sales").collect()
    )
    reader.start()
    time.sleep(0.3)
    spark.sql("INSERT OVERWRITE TABLE sales PARTITION (ds='2026-11-20') VALUES (5, 50.0)")
    print(f"writer done after {time.monotonic() - t0:.2f} s (it waited for the reader)")
    reader.join()
    print("rows now:", spark.sql("SELECT count(*) AS n FROM sales").collect()[0]["n"])
    print("locks left:", spark.sql("SHOW LOCKS").count())
    spark.stop()


if __name__ == "__main__":
    main()
