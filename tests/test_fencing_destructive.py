"""The lease checked before each destructive step of a write, not only at its start and its job
commit (docs/fencing.md, "What is checked where"): the delete of an overwrite's old data before
the job, and each delete and rename inside the job commit (a dynamic overwrite's partitions, the
task outputs moved into place), and a Hive-serde insert's load after its staging commit.

Real Spark, real ZooKeeper (through a proxy the test silences), real files: the tables live on
the blocking test file system (tests/support/blockfs.py), which holds one delete or rename of a
chosen path. While a statement sits in that step its ZooKeeper link is silenced until the JVM
fenced it (the lease lapsed); then the step is let go. The step in flight finishes (one file
system call: the window docs/fencing.md states); every later one must be refused: nothing more
of the fenced statement deleted or published, and it fails with LOCKS_LOST naming the step.
One trial per step; ``SPARKLOCK_NEMESIS_TRIALS=N`` runs N.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import blockfs
from tests.support.lease_faults import (
    heal_and_reconnect,
    in_background,
    lease_conf,
    leased,
    wait_until,
)
from tests.support.nemesis import trials
from tests.support.spark import build_session

pytestmark = [pytest.mark.spark, pytest.mark.zookeeper, pytest.mark.nemesis]


@pytest.fixture(scope="module")
def spark(tmp_path_factory, proxy):
    base = tmp_path_factory.mktemp("fencing_destructive")
    session = build_session(
        "test_fencing_destructive",
        base / "warehouse",
        conf=blockfs.builder_conf(),
        hive_root=base,  # Hive-serde tables
    )
    with leased(session, lease_conf(proxy, "destructive")):
        yield session
    session.stop()


@pytest.fixture(scope="module")
def fs(spark):
    return blockfs.control(spark)


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path


def fences(spark) -> int:
    text = str(spark._jvm.io.sparklock.shim.lease.Lease.fences())
    return len(text.splitlines()) if text else 0


def fenced_in_step(spark, proxy, fs, op: str, path_regex: str, sql: str) -> str:
    """Run ``sql`` on a thread with the next ``op`` of a path matching ``path_regex`` held; once
    the statement sits in it, silence ZooKeeper until the JVM fenced it, then let the step go.
    Returns the statement's error text (an AssertionError if it succeeded)."""
    before = fences(spark)
    fs.hold(op, path_regex)
    writer, outcome = in_background(lambda: spark.sql(sql).collect())
    try:
        wait_until(lambda: fs.held() is not None or not writer.is_alive(), 60, f"a held {op}")
        assert fs.held() is not None, f"no {op} matched {path_regex}: {outcome}\n{fs.calls()}"
        proxy.silence()
        wait_until(lambda: fences(spark) > before, 30, "the JVM fencing the statement")
    finally:
        fs.release()
        writer.join(60)
        heal_and_reconnect(spark, proxy)
    assert "error" in outcome, f"{sql!r} was not fenced: {outcome}"
    return outcome["error"]


def files(directory: Path) -> set[str]:
    """Data files below ``directory`` relative to it (no staging, no markers)."""
    return {
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if p.is_file() and not any(part[0] in "._" for part in p.relative_to(directory).parts)
    }


def test_overwrite_delete_before_the_job_is_checked(spark, proxy, fs, root):
    """INSERT OVERWRITE deletes the old data before its job: the table's directory, then each
    partition at a custom location (Spark's deleteWithJob). Held in the first, fenced: the custom
    location's data must survive."""
    for k in range(trials()):
        table, custom = root / f"o{k}_tbl", root / f"o{k}_custom"
        spark.sql(
            f"CREATE TABLE o{k} (id INT, p INT) USING parquet PARTITIONED BY (p) "
            f"LOCATION '{blockfs.url(table)}'"
        )
        spark.sql(f"INSERT INTO o{k} VALUES (1, 1)")
        spark.sql(f"ALTER TABLE o{k} ADD PARTITION (p=2) LOCATION '{blockfs.url(custom)}'")
        spark.sql(f"INSERT INTO o{k} PARTITION (p=2) VALUES (2)")
        kept = files(custom)
        assert kept, "the custom partition has no data to lose"
        error = fenced_in_step(
            spark,
            proxy,
            fs,
            "delete",
            f"/o{k}_tbl$",
            f"INSERT OVERWRITE TABLE o{k} VALUES (10, 1), (20, 2)",
        )
        assert files(custom) == kept, f"trial {k}: a partition deleted after the lease lapsed"
        assert "LOCKS_LOST" in error and "refused the delete of" in error, error


def test_dynamic_overwrite_commit_is_checked_per_partition(spark, proxy, fs, root):
    """A dynamic overwrite's job commit deletes and renames partition after partition. Held in
    the first partition's delete, fenced: no rename of it, nothing of the other partition."""
    for k in range(trials()):
        table = root / f"d{k}_tbl"
        spark.sql(
            f"CREATE TABLE d{k} (id INT, p INT) USING parquet PARTITIONED BY (p) "
            f"LOCATION '{blockfs.url(table)}'"
        )
        spark.sql(f"INSERT INTO d{k} VALUES (1, 1), (2, 2)")
        before = files(table)
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
        try:
            error = fenced_in_step(
                spark,
                proxy,
                fs,
                "delete",
                rf"/d{k}_tbl/p=\d$",
                f"INSERT OVERWRITE TABLE d{k} VALUES (10, 1), (20, 2)",
            )
        finally:
            spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
        after = files(table)
        assert after <= before, (
            f"trial {k}: the fenced overwrite published {sorted(after - before)}"
        )
        held = {f for f in before if f not in after}
        assert len(held) <= 1, f"trial {k}: deleted after the lease lapsed: {sorted(held)}"
        assert "LOCKS_LOST" in error and "in the job commit" in error, error


def test_job_commit_renames_are_checked_one_by_one(spark, proxy, fs, root):
    """The job commit moves each task's output into place, one rename per file. Held in the
    first, fenced: no later file is published."""
    for k in range(trials()):
        table = root / f"r{k}_tbl"
        spark.sql(f"CREATE TABLE r{k} (id BIGINT) USING parquet LOCATION '{blockfs.url(table)}'")
        error = fenced_in_step(
            spark,
            proxy,
            fs,
            "rename",
            rf"/r{k}_tbl/_temporary/\d+/task_[^/]+/part-",
            f"INSERT INTO r{k} SELECT id FROM range(0, 8, 1, 4)",
        )
        published = files(table)
        assert len(published) <= 1, f"trial {k}: published after the lapse: {sorted(published)}"
        assert "LOCKS_LOST" in error and "refused the rename of" in error, error


def test_hive_load_after_the_staging_commit_is_checked(spark, proxy, fs, root):
    """A Hive-serde insert commits its job into Hive's staging, then Hive's loadTable deletes the
    old data and moves the new in. Held in the staging commit's rename, fenced: no load."""
    for k in range(trials()):
        table = root / f"h{k}_tbl"
        spark.sql(f"CREATE TABLE h{k} (id INT) STORED AS TEXTFILE LOCATION '{blockfs.url(table)}'")
        spark.sql(f"INSERT INTO h{k} VALUES (1)")
        kept = files(table)
        assert kept, "the table has no data to lose"
        error = fenced_in_step(
            spark,
            proxy,
            fs,
            "rename",
            rf"/h{k}_tbl/.*/task_[^/]+/part-",
            f"INSERT OVERWRITE TABLE h{k} SELECT 10",
        )
        assert files(table) == kept, f"trial {k}: the fenced insert loaded {sorted(files(table))}"
        assert "LOCKS_LOST" in error and "the Hive load of" in error, error


def test_truncate_is_checked_per_partition(spark, proxy, fs, root):
    """TRUNCATE TABLE (a managed table: the database on the blocking file system) deletes and
    re-creates each partition's directory; sparklock runs it one partition at a time, the lease
    checked before each. Held in the first, fenced: the other partitions keep their data."""
    for k in range(trials()):
        db = f"tdb{k}"
        spark.sql(f"CREATE DATABASE {db} LOCATION '{blockfs.url(root / db)}'")
        spark.sql(f"CREATE TABLE {db}.t (id INT, p INT) USING parquet PARTITIONED BY (p)")
        spark.sql(f"INSERT INTO {db}.t VALUES (1, 1), (2, 2), (3, 3)")
        table = root / db / "t"
        before = files(table)
        assert len(before) == 3, f"expected one file per partition in {table}: {sorted(before)}"
        error = fenced_in_step(
            spark, proxy, fs, "delete", rf"/{db}/t/p=\d$", f"TRUNCATE TABLE {db}.t"
        )
        lost = before - files(table)
        assert len(lost) == 1, f"trial {k}: deleted after the lease lapsed: {sorted(lost)}"
        assert "LOCKS_LOST" in error and "refused the truncate of" in error, error
