"""Issue 3: the locks Spark statements take, observed end to end on a real local Spark session.

For each statement form the exact lock set is asserted twice and must agree: what
``EXPLAIN LOCKS`` says, and what another session sees with ``SHOW LOCKS`` while the statement
runs (kept running by a slow Python UDF). Then the Spark failure locking exists to prevent
(concurrent static-partition INSERTs into different partitions of one parquet table sharing
``<table>/_temporary``), a writer waiting for a reader, and a LOCK_CONFLICT message.

One ``local[2]`` session for the module, parquet tables in a temporary warehouse, the default
embedded manager with the default ``queue`` wait policy and a generous budget (300 × 200 ms).
"""

from __future__ import annotations

import threading
import time

import pytest
from pyspark.sql import SparkSession  # noqa: E402

import sparklock  # noqa: E402
from tests.support.spark import SparkSpec  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("unlock_leftover_locks")]

S, X = "SHARED", "EXCLUSIVE"
SLEEP_S = 0.3  # per row of the slow UDF
BUDGET = {  # numRetries × retryInterval = 60 s
    "spark.sparklock.lock.numRetries": "300",
    "spark.sparklock.lock.retryInterval": "200ms",
}


def _slow(x):
    time.sleep(SLEEP_S)
    return x


SPARK = SparkSpec(
    app="spark-locks",
    conf=BUDGET,
    setup=lambda session: session.udf.register("slow", _slow, "int"),
    setup_sql=(
        "CREATE TABLE a (k INT, v STRING) USING parquet",
        "CREATE TABLE b (k INT, w STRING) USING parquet",
        "CREATE TABLE c (k INT) USING parquet",
        "CREATE TABLE u (k INT) USING parquet",
        "CREATE TABLE pt (v INT, p STRING) USING parquet PARTITIONED BY (p)",
        "CREATE TABLE pq (v INT, p STRING, q STRING) USING parquet PARTITIONED BY (p, q)",
        "CREATE TABLE w (v INT, p STRING, q STRING) USING parquet PARTITIONED BY (p, q)",
        "INSERT INTO a VALUES (1, 'x'), (2, 'y'), (3, 'z'), (4, 'w')",
        "INSERT INTO b VALUES (1, 'x'), (2, 'y'), (3, 'z'), (4, 'w')",
        "INSERT INTO c VALUES (1), (2), (3), (4)",
        "INSERT INTO pt VALUES (1, '1'), (2, '1'), (3, '1'), (4, '2'), (5, '3')",
        "INSERT INTO pq VALUES (1, '1', 'a'), (2, '1', 'b'), (3, '1', 'b'), (4, '2', 'a')",
    ),
)


@pytest.fixture(scope="module")
def observer(spark):
    """Another session of the same application: what it sees is what everyone else sees."""
    return spark.newSession()


def names(session: SparkSession, statement: str) -> list[tuple[str, str]]:
    return sorted((r[0], r[1]) for r in session.sql(statement).collect())


def new_session(spark: SparkSession, **conf: str) -> SparkSession:
    session = spark.newSession()
    for key, value in {**BUDGET, **conf}.items():
        session.conf.set(key, value)
    return session


def held_while_running(spark, observer, statement, deadline_s=60.0):
    """Run ``statement`` on a thread; every distinct non-empty ``SHOW LOCKS`` seen meanwhile.

    Also returns what ``SHOW LOCKS`` shows right after the statement returned.
    """
    outcome: dict = {}

    def run():
        try:
            spark.sql(statement).collect()
            outcome["after"] = names(observer, "SHOW LOCKS")
        except Exception as e:  # noqa: BLE001
            outcome["error"] = e

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    seen: list[list[tuple[str, str]]] = []
    deadline = time.monotonic() + deadline_s
    while runner.is_alive() and time.monotonic() < deadline:
        shown = names(observer, "SHOW LOCKS")
        if shown and shown not in seen:
            seen.append(shown)
        time.sleep(0.01)
    runner.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not runner.is_alive(), f"{statement!r} still running after {deadline_s} s"
    assert "error" not in outcome, outcome.get("error")
    assert seen, f"no lock was ever seen while {statement!r} ran"
    return seen, outcome["after"]


# -- 1. exact lock sets: EXPLAIN LOCKS == what is held while it runs ----------------------------
W_FACET = "default@w@_sparklock_writers"
CASES = {
    "select_join_subquery_cte": (
        "WITH x AS (SELECT * FROM a) SELECT slow(x.k) FROM x JOIN b ON x.k = b.k "
        "WHERE x.k IN (SELECT k FROM c) AND x.k <= (SELECT max(k) FROM c)",
        [("default", S), ("default@a", S), ("default@b", S), ("default@c", S)],
    ),
    "full_read_of_a_partitioned_table": (
        # no filter, no pruning: every partition is read, so each is locked (Hive does the same;
        # a partition writer takes only SHARED on the table and must still conflict)
        "SELECT slow(v) FROM pt",
        [
            ("default", S),
            ("default@pt", S),
            ("default@pt@p=1", S),
            ("default@pt@p=2", S),
            ("default@pt@p=3", S),
        ],
    ),
    "pruned_read_one_level": (
        "SELECT slow(v) FROM pt WHERE p = '1'",
        [("default", S), ("default@pt", S), ("default@pt@p=1", S)],
    ),
    "pruned_read_two_levels": (
        "SELECT slow(v) FROM pq WHERE p = '1'",
        [
            ("default", S),
            ("default@pq", S),
            ("default@pq@p=1", S),
            ("default@pq@p=1/q=a", S),
            ("default@pq@p=1/q=b", S),
        ],
    ),
    "pruned_read_second_level_only": (
        "SELECT slow(v) FROM pq WHERE q = 'a'",
        [
            ("default", S),
            ("default@pq", S),
            ("default@pq@p=1", S),
            ("default@pq@p=1/q=a", S),
            ("default@pq@p=2", S),
            ("default@pq@p=2/q=a", S),
        ],
    ),
    "insert_static_partition": (
        "INSERT INTO w PARTITION (p = '1', q = 'a') "
        "SELECT slow(x) FROM VALUES (1), (2), (3), (4) AS t(x)",
        [
            ("default", S),
            ("default@w", S),
            ("default@w@p=1", S),
            ("default@w@p=1/q=a", X),
            (W_FACET, X),
        ],
    ),
    "insert_dynamic_partitions": (
        "INSERT INTO w SELECT slow(x), p, q "
        "FROM VALUES (1, 'd', '1'), (2, 'd', '2'), (3, 'e', '1'), (4, 'e', '1') AS t(x, p, q)",
        [("default", S), ("default@w", X), (W_FACET, X)],
    ),
    "insert_partial_static_prefix": (
        "INSERT INTO w PARTITION (p = 'a', q) "
        "SELECT slow(x), q FROM VALUES (1, '1'), (2, '2'), (3, '1'), (4, '2') AS t(x, q)",
        [("default", S), ("default@w", S), ("default@w@p=a", X), (W_FACET, X)],
    ),
    "insert_unpartitioned": (
        "INSERT INTO u SELECT slow(x) FROM VALUES (1), (2), (3), (4) AS t(x)",
        [("default", S), ("default@u", X), ("default@u@_sparklock_writers", X)],
    ),
    "insert_overwrite_whole_table": (
        "INSERT OVERWRITE TABLE u SELECT slow(x) FROM VALUES (5), (6), (7), (8) AS t(x)",
        [("default", S), ("default@u", X), ("default@u@_sparklock_writers", X)],
    ),
    "insert_overwrite_whole_partitioned_table": (
        "INSERT OVERWRITE TABLE w SELECT slow(x), p, q "
        "FROM VALUES (1, 'o', '1'), (2, 'o', '2'), (3, 'o', '1'), (4, 'o', '2') AS t(x, p, q)",
        [("default", S), ("default@w", X), (W_FACET, X)],
    ),
    "insert_select_from_same_table_x_wins": (
        "INSERT INTO pt PARTITION (p = '1') SELECT slow(v) FROM pt WHERE p IN ('1', '2')",
        [
            ("default", S),
            ("default@pt", S),
            ("default@pt@_sparklock_writers", X),
            ("default@pt@p=1", X),
            ("default@pt@p=2", S),
        ],
    ),
}


@pytest.mark.parametrize("statement, expected", list(CASES.values()), ids=list(CASES))
def test_exact_lock_set_explained_and_held(spark, observer, statement, expected):
    expected = sorted(expected)
    explained = names(spark, f"EXPLAIN LOCKS {statement}")
    assert explained == expected, "EXPLAIN LOCKS"
    assert names(observer, "SHOW LOCKS") == []  # EXPLAIN LOCKS holds nothing

    seen, after = held_while_running(spark, observer, statement)
    # All-or-nothing: a snapshot is the whole set; a partial one would only be a subset of it.
    assert expected in seen, f"held while running: {seen}"
    assert all(set(s) <= set(expected) for s in seen), f"held while running: {seen}"
    assert after == []  # released before the call returned
    assert names(observer, "SHOW LOCKS EXTENDED") == []


# -- 2. the Spark failure locking prevents: concurrent writers of one parquet table ---------------
THREADS, INSERTS = 4, 10


def _concurrent_inserts(spark, table: str, **conf: str) -> tuple[list[Exception], float]:
    """THREADS sessions × INSERTS static-partition inserts, each thread into its own partition."""
    failures: list[Exception] = []
    sessions = [new_session(spark, **conf) for _ in range(THREADS)]
    start = threading.Barrier(THREADS)

    def work(i: int) -> None:
        start.wait()
        for j in range(INSERTS):
            try:
                sessions[i].sql(f"INSERT INTO {table} PARTITION (p = 't{i}') VALUES ({j})")
            except Exception as e:  # noqa: BLE001
                failures.append(e)

    began = time.monotonic()
    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    return failures, time.monotonic() - began


def test_concurrent_partition_inserts_do_not_fail_and_readers_go_on(spark):
    spark.sql("CREATE TABLE cw (v INT, p STRING) USING parquet PARTITIONED BY (p)")
    spark.sql("INSERT INTO cw PARTITION (p = 'r') VALUES (-1), (-2)")
    # The reader may not wait at all: one attempt, so any conflict with a writer fails it.
    reader = new_session(spark, **{"spark.sparklock.lock.numRetries": "1"})
    stop = threading.Event()
    reads: list = []
    read_errors: list = []

    def read() -> None:
        while not stop.is_set():
            try:
                reads.append(reader.sql("SELECT count(*) FROM cw WHERE p = 'r'").collect()[0][0])
            except Exception as e:  # noqa: BLE001
                read_errors.append(e)

    reading = threading.Thread(target=read, daemon=True)
    reading.start()
    try:
        failures, took = _concurrent_inserts(spark, "cw")
        reads_during = len(reads)
    finally:
        stop.set()
        reading.join(timeout=60)
    print(
        f"\nlocked: {THREADS}x{INSERTS} concurrent partition inserts: {len(failures)} failures "
        f"in {took:.1f} s; reader of another partition: {reads_during} reads, "
        f"{len(read_errors)} errors"
    )
    assert failures == [], [str(f)[:300] for f in failures[:3]]
    assert read_errors == [], [str(e)[:300] for e in read_errors[:3]]
    assert reads_during > 0 and set(reads) == {2}
    got = sorted(tuple(r) for r in spark.sql("SELECT p, v FROM cw WHERE p != 'r'").collect())
    assert got == sorted((f"t{i}", j) for i in range(THREADS) for j in range(INSERTS))
    assert names(spark, "SHOW LOCKS") == []


# -- 3. waiting and conflicts --------------------------------------------------------------------
def test_writer_waits_for_reader_and_completes_after_its_release(spark, observer):
    spark.sql("CREATE TABLE rw (v INT, p STRING) USING parquet PARTITIONED BY (p)")
    spark.sql("INSERT INTO rw VALUES (1, '1'), (2, '1'), (3, '1'), (4, '1'), (9, '2')")
    partition = ("default@rw@p=1", S)
    times: dict = {}
    results: dict = {}

    def read() -> None:
        results["read"] = sorted(
            r[0] for r in spark.sql("SELECT slow(v) FROM rw WHERE p = '1'").collect()
        )
        times["reader_returned"] = time.monotonic()

    def write() -> None:
        times["writer_started"] = time.monotonic()
        writer.sql("INSERT OVERWRITE TABLE rw PARTITION (p = '1') VALUES (100)")
        times["writer_done"] = time.monotonic()

    writer = new_session(spark)
    reading = threading.Thread(target=read, daemon=True)
    reading.start()
    deadline = time.monotonic() + 30
    while partition not in names(observer, "SHOW LOCKS") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert partition in names(observer, "SHOW LOCKS"), "the reader never held its lock"
    writing = threading.Thread(target=write, daemon=True)
    writing.start()
    # The queued writer's EXCLUSIVE is listed beside the reader's SHARED (it keeps its place
    # in line, as a ZooKeeper node would); what matters is that it is not done before the reader.
    queued_seen = False
    while reading.is_alive() and time.monotonic() < deadline:
        shown = names(observer, "SHOW LOCKS")
        if partition in shown:
            times["reader_seen_holding"] = time.monotonic()
            queued_seen = queued_seen or ("default@rw@p=1", X) in shown
            assert "writer_done" not in times
        time.sleep(0.01)
    reading.join(timeout=30)
    writing.join(timeout=60)
    assert "read" in results and "writer_done" in times, (results, times)
    assert results["read"] == [1, 2, 3, 4]  # the reader saw the old partition, whole
    # released no later than the reader's call returned, and the writer only finished after it
    assert times["writer_done"] > times["reader_returned"] > times["writer_started"]
    assert times["writer_done"] > times["reader_seen_holding"]
    print(
        f"\nwriter waited for the reader: started {times['writer_started']:.3f}, reader returned "
        f"{times['reader_returned']:.3f} (+{times['reader_returned'] - times['writer_started']:.3f}"
        f" s), writer done +{times['writer_done'] - times['reader_returned']:.3f} s after that;"
        f" queued EXCLUSIVE listed by SHOW LOCKS while waiting: {queued_seen}"
    )
    got = sorted(tuple(r) for r in spark.sql("SELECT p, v FROM rw").collect())
    assert got == [("1", 100), ("2", 9)]
    assert names(observer, "SHOW LOCKS") == []


def test_lock_conflict_names_object_modes_and_the_holders_query(spark, observer):
    spark.sql("CREATE TABLE lc (v INT, p STRING) USING parquet PARTITIONED BY (p)")
    holder = spark.newSession()
    blocked = new_session(
        spark,
        **{"spark.sparklock.lock.numRetries": "1", "spark.sparklock.lock.retryInterval": "10ms"},
    )
    holder.sql("LOCK TABLE lc EXCLUSIVE")
    try:
        assert names(observer, "SHOW LOCKS") == [("default@lc", X)]
        began = time.monotonic()
        with pytest.raises(Exception) as info:
            blocked.sql("INSERT INTO lc PARTITION (p = '1') VALUES (1)")
        waited = time.monotonic() - began
    finally:
        holder.sql("UNLOCK TABLE lc")
    message = str(info.value)
    assert "LOCK_CONFLICT" in message, message
    assert "default@lc" in message, message
    assert "EXCLUSIVE" in message and "SHARED" in message, message  # wanted S, held X
    assert "LOCK TABLE lc EXCLUSIVE" in message, message  # the holder's query text
    line = next(x for x in message.splitlines() if "LOCK_CONFLICT" in x)
    print(f"\nfailed after {waited:.3f} s: {line.strip()[:400]}")
    assert spark.sql("SELECT count(*) FROM lc").collect()[0][0] == 0  # the insert never ran
    assert names(observer, "SHOW LOCKS") == []


# -- 4. reads see what the writer before them committed -----------------------------------------
def _read_planned_before_write(spark, observer, table: str, read_sql: str, write_sql: str):
    """``read_sql`` is planned (its file listing taken) while a writer holds ``table``; the writer
    then replaces the files and lets go. Returns the read's rows, or raises its error."""
    reader = new_session(spark)
    writer = new_session(spark)
    reader.sql(read_sql).collect()  # the reader's session now caches the table's file listing
    writer.sql(f"LOCK TABLE {table} EXCLUSIVE")
    outcome: dict = {}

    def read() -> None:
        try:
            outcome["rows"] = [tuple(r) for r in reader.sql(read_sql).collect()]
        except Exception as e:  # noqa: BLE001 - reported by the caller
            outcome["error"] = e

    service = sparklock.service.get_service()
    reading = threading.Thread(target=read, daemon=True)
    try:
        reading.start()
        deadline = time.monotonic() + 30
        while service.waiting() == 0 and reading.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert service.waiting() == 1, "the read never waited for the writer"
        writer.sql(write_sql)  # the writer's own LOCK TABLE does not block it
    finally:
        writer.sql(f"UNLOCK TABLE {table}")
    reading.join(timeout=60)
    assert not reading.is_alive()
    assert names(observer, "SHOW LOCKS") == []
    if "error" in outcome:
        raise outcome["error"]
    return outcome["rows"]


def test_read_planned_before_a_write_reads_the_written_files(spark, observer):
    """Spark lists a table's files when it plans (or reuses the session's cached listing), before
    the statement gets its locks; the files it reads must be listed after the grant."""
    spark.sql("CREATE TABLE rr (k INT) USING parquet")
    spark.sql("INSERT INTO rr VALUES (1), (2), (3), (4)")
    rows = _read_planned_before_write(
        spark, observer, "rr", "SELECT sum(k) FROM rr", "INSERT OVERWRITE TABLE rr VALUES (10)"
    )
    assert rows == [(10,)]


def test_pruned_read_planned_before_a_partition_overwrite_reads_the_new_partition(spark, observer):
    spark.sql("CREATE TABLE rrp (v INT, p STRING) USING parquet PARTITIONED BY (p)")
    spark.sql("INSERT INTO rrp VALUES (1, '1'), (2, '1'), (3, '2')")
    rows = _read_planned_before_write(
        spark,
        observer,
        "rrp",
        "SELECT sum(v), count(*) FROM rrp WHERE p = '1'",
        "INSERT OVERWRITE TABLE rrp PARTITION (p = '1') VALUES (20)",
    )
    assert rows == [(20, 1)]


def test_dataframe_built_before_a_write_reads_the_written_files(spark, observer):
    """A DataFrame analysed (its listing taken) before a write, run after it: the listing it
    carries is refreshed at the grant. (A DataFrame already *run* keeps the file list of its
    first run, as in Spark without sparklock: see the README.)"""
    spark.sql("CREATE TABLE rrd (k INT) USING parquet")
    spark.sql("INSERT INTO rrd VALUES (1), (2)")
    reader = new_session(spark)
    assert reader.table("rrd").count() == 2  # the session caches the relation and its listing
    frame = reader.table("rrd").where("k > 0")
    writer = new_session(spark)
    writer.sql("INSERT OVERWRITE TABLE rrd VALUES (7)")
    assert [tuple(r) for r in frame.collect()] == [(7,)]
    assert names(observer, "SHOW LOCKS") == []


def test_refresh_listing_false_keeps_sparks_planning_time_listing(spark, observer):
    """The key turns the refresh off: the same race then fails as it does without sparklock, so
    the tests above really depend on the refresh."""
    spark.sql("CREATE TABLE rro (k INT) USING parquet")
    spark.sql("INSERT INTO rro VALUES (1), (2)")
    reader = new_session(spark, **{"spark.sparklock.read.refreshListing": "false"})
    assert reader.table("rro").count() == 2
    frame = reader.table("rro").where("k > 0")
    new_session(spark).sql("INSERT OVERWRITE TABLE rro VALUES (7)")
    # Spark 4: [FAILED_READ_FILE.FILE_NOT_EXIST]; Spark 3.5: SparkFileNotFoundException "File ...
    # does not exist"
    with pytest.raises(Exception, match="FILE_NOT_EXIST|SparkFileNotFoundException"):
        frame.collect()
    assert names(observer, "SHOW LOCKS") == []
