"""The leader-killed checker's verdicts on what a trial can leave, without Spark or ZooKeeper:
the checker must pass what correct locking leaves and fail what a broken lock leaves."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq

from tests.support.nemesis import Churn, read_batches

ROWS = {"A0": 6, "B0": 4}
LOST = "LOCKS_LOST: the locks of query q were lost"


def churn(final: Counter, **answers: tuple[bool, float]) -> Churn:
    said = {
        batch: {"ok": ok, "error": None if ok else LOST, "ended": ended}
        for batch, (ok, ended) in answers.items()
    }
    return Churn(said, ROWS, final, "127.0.0.1:1")


def test_a_directory_with_no_data_file_holds_no_batch(tmp_path):
    (tmp_path / "_SUCCESS").write_text("")
    assert read_batches(tmp_path) == Counter()
    pq.write_table(pa.table({"batch": ["B0"] * 4}), tmp_path / "part-0.parquet")
    assert read_batches(tmp_path) == Counter({"B0": 4})


def test_empty_after_the_last_holder_lost_its_lock_is_no_violation():
    assert churn(Counter(), A0=(True, 1.0), B0=(False, 2.0)).violations() == []


def test_empty_after_a_success_ended_last_is_a_violation():
    assert churn(Counter(), A0=(False, 1.0), B0=(True, 2.0)).violations()
    assert churn(Counter(), A0=(True, 1.0), B0=(True, 2.0)).violations()


def test_two_batches_or_a_partial_one_are_violations():
    assert churn(Counter({"A0": 6, "B0": 4}), A0=(True, 1.0), B0=(True, 2.0)).violations()
    assert churn(Counter({"B0": 3}), A0=(True, 1.0), B0=(True, 2.0)).violations()
    assert churn(Counter({"B0": 4}), A0=(True, 1.0), B0=(True, 2.0)).violations() == []
