"""Lock escalation (opt-in): fewer objects for statements touching many partitions — and still
correct against concurrent partition writers. Correctness, not timing (benchmarks time it)."""

from __future__ import annotations

import pytest

from sparklock.config import Escalation, LockSettings, SparkLockConfig
from sparklock.errors import ConfigError, LockConflictError
from sparklock.locks.model import LockMode, LockRequest, WaitPolicy, build_lock_set
from sparklock.locks.objects import LockObject
from sparklock.managers.embedded import EmbeddedLockManager
from sparklock.rules.facts import parse_facts
from sparklock.rules.policy import escalate, requests_for
from sparklock.service import LockService

S, X = LockMode.SHARED, LockMode.EXCLUSIVE
FAIL_FAST = LockSettings(num_retries=1, retry_interval=0.01, wait_policy=WaitPolicy.RETRY)
WRITES_ONLY = Escalation(partitions=3)
ALL = Escalation(partitions=3, reads=True)
PARTITION_KEYS = "spark.sparklock.lock.escalation.partitions"
READS_KEY = "spark.sparklock.lock.escalation.reads"


def part(i: object, table: str = "t") -> LockObject:
    return LockObject.of_partition("default", table, {"p": str(i)})


def table(name: str = "t") -> LockObject:
    return LockObject.of_table("default", name)


def facet(name: str = "t") -> LockObject:
    return LockObject.table_writers("default", name)


def rows(requests: list[LockRequest]) -> list[tuple[str, str]]:
    return [(r.name, r.mode.value) for r in build_lock_set(requests)]


def reads(n: int, name: str = "t") -> list[LockRequest]:
    return [LockRequest(table(name), S)] + [LockRequest(part(i, name), S) for i in range(n)]


def writes(n: int, name: str = "t") -> list[LockRequest]:
    return [LockRequest(table(name), S)] + [LockRequest(part(i, name), X) for i in range(n)]


# -- the policy -----------------------------------------------------------------------------------
def test_off_by_default_changes_nothing():
    assert not Escalation().enabled
    for requests in (reads(50), writes(50)):
        assert escalate(requests, Escalation()) is requests
        assert escalate(requests, SparkLockConfig.from_conf({}).escalation) is requests


def test_writes_beyond_the_threshold_lock_the_table_exclusive():
    assert rows(escalate(writes(4), WRITES_ONLY)) == [
        ("default", "SHARED"),
        ("default@t", "EXCLUSIVE"),
    ]
    # at the threshold: unchanged
    assert escalate(writes(3), WRITES_ONLY) == writes(3)


def test_reads_escalate_only_when_asked():
    assert escalate(reads(10), WRITES_ONLY) == reads(10)
    assert rows(escalate(reads(4), ALL)) == [
        ("default", "SHARED"),
        ("default@t", "SHARED"),
        ("default@t@_sparklock_writers", "SHARED"),
    ]
    assert escalate(reads(3), ALL) == reads(3)


def test_with_reads_on_every_partition_writer_takes_the_writers_facet():
    one = [LockRequest(table(), S), LockRequest(part(1), X)]
    assert ("default@t@_sparklock_writers", "EXCLUSIVE") in rows(escalate(one, ALL))
    assert ("default@t@_sparklock_writers", "EXCLUSIVE") not in rows(escalate(one, WRITES_ONLY))
    # a partition prefix (dynamic insert with a static prefix) is a partition writer too
    prefix = LockObject.of_partition("default", "t2", {"p": "a"})
    assert ("default@t2@_sparklock_writers", "EXCLUSIVE") in rows(
        escalate([LockRequest(prefix, X)], ALL)
    )


def test_mixed_statement_reads_many_writes_one_of_the_same_table():
    requests = reads(10) + [LockRequest(part(1), X)]
    got = dict(rows(escalate(requests, ALL)))
    assert got == {
        "default": "SHARED",
        "default@t": "SHARED",
        "default@t@p=1": "EXCLUSIVE",
        "default@t@_sparklock_writers": "EXCLUSIVE",
    }


def test_tables_are_counted_separately():
    requests = reads(4, "a") + reads(2, "b") + writes(4, "c")
    got = dict(rows(escalate(requests, ALL)))
    assert got["default@a"] == "SHARED" and "default@a@p=0" not in got
    assert got["default@b@p=0"] == "SHARED" and "default@b@_sparklock_writers" not in got
    assert got["default@c"] == "EXCLUSIVE" and not any(k.startswith("default@c@") for k in got)


def test_escalation_follows_the_session_conf():
    facts = {
        "reads": [
            {
                "kind": "table",
                "database": "default",
                "table": "t",
                "partitionColumns": ["p"],
                "partitions": [{"p": str(i)} for i in range(5)],
            }
        ],
    }
    assert len(requests_for(parse_facts(facts)).requests) == 6
    on = parse_facts({**facts, "conf": {PARTITION_KEYS: "4", READS_KEY: "true"}})
    assert {r.name for r in requests_for(on).requests} == {
        "default@t",
        "default@t@_sparklock_writers",
    }
    assert LockService().explain(on) == [
        ("default", "SHARED"),
        ("default@t", "SHARED"),
        ("default@t@_sparklock_writers", "SHARED"),
    ]


@pytest.mark.parametrize(
    "key,value", [(PARTITION_KEYS, "-1"), (PARTITION_KEYS, "many"), (READS_KEY, "yes")]
)
def test_bad_values_are_config_errors(key, value):
    with pytest.raises(ConfigError, match=key):
        SparkLockConfig.from_conf({key: value})


def test_config_parses_escalation():
    c = SparkLockConfig.from_conf({PARTITION_KEYS: "1000", READS_KEY: "true"})
    assert c.escalation == Escalation(1000, True) and c.escalation.enabled


# -- correctness against concurrent writers (the grant rule, on a real manager) ------------------
def take(m, requests, owner):
    return m.acquire(requests, owner=owner, query_id=f"q_{owner}", settings=FAIL_FAST)


def test_escalated_reader_and_sparklock_partition_writer_exclude_each_other():
    m = EmbeddedLockManager(FAIL_FAST)
    reader = take(m, escalate(reads(100), ALL), "reader")
    # a sparklock writer of one partition (any statement kind: the facet comes from the policy)
    writer_set = escalate([LockRequest(table(), S), LockRequest(part(7), X)], ALL)
    with pytest.raises(LockConflictError, match="_sparklock_writers"):
        take(m, writer_set, "writer")
    reader.release()
    writer = take(m, writer_set, "writer")
    with pytest.raises(LockConflictError):
        take(m, escalate(reads(100), ALL), "reader2")
    # readers of a few partitions (not escalated) still run beside the writer of another one
    take(m, escalate(reads(2), ALL)[:1] + [LockRequest(part(1), S)], "small").release()
    writer.release()


def test_escalated_reads_share_with_other_readers():
    m = EmbeddedLockManager(FAIL_FAST)
    a = take(m, escalate(reads(100), ALL), "a")
    b = take(m, escalate(reads(100), ALL), "b")
    c = take(m, reads(5), "c")  # a plain reader, e.g. escalation off in its session
    for h in (a, b, c):
        h.release()


def test_escalated_writer_blocks_plain_partition_readers_hive_compatible():
    """Write escalation needs nothing from others: a Hive-style partition reader (table S +
    partition S, no facet) is refused while the table is EXCLUSIVE, and vice versa."""
    m = EmbeddedLockManager(FAIL_FAST)
    writer = take(m, escalate(writes(50), WRITES_ONLY), "writer")
    with pytest.raises(LockConflictError):
        take(m, reads(1), "hive_reader")
    writer.release()
    reader = take(m, reads(1), "hive_reader")
    with pytest.raises(LockConflictError):
        take(m, escalate(writes(50), WRITES_ONLY), "writer")
    reader.release()


def test_a_big_read_escalates_before_objects_are_made_and_covers_the_whole_table():
    def ref(parts):
        return {
            "kind": "table",
            "database": "default",
            "table": "t",
            "partitionColumns": ["p"],
            "partitions": [{"p": str(i)} for i in parts],
        }

    # a self-join: one side reads 5 partitions (escalated at once), the other 2 of them
    facts = parse_facts({"reads": [ref(range(5)), ref([1, 2])]})
    got = rows(requests_for(facts, ALL).requests)
    assert got == [
        ("default", "SHARED"),
        ("default@t", "SHARED"),
        ("default@t@_sparklock_writers", "SHARED"),
    ]
    # the same as escalating the plain requests afterwards
    plain = requests_for(facts, Escalation()).requests
    assert got == rows(escalate(plain, ALL))
