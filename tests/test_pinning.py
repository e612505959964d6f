"""Pinned partitions without Spark: which partitions equality constraints on a write's rows pin,
and the lock set the policy builds from them (the Delta tests check the JVM's side on real
Delta statements: tests/test_delta_partitions.py)."""

from __future__ import annotations

import pytest

from sparklock.rules.facts import parse_facts
from sparklock.rules.pinning import MAX_PINNED, pinned_specs
from sparklock.service import LockService

DELETE = "org.apache.spark.sql.delta.commands.DeleteCommand"


@pytest.mark.parametrize(
    "columns,constraints,expected",
    [
        (["p"], {"p": ["1"]}, [{"p": "1"}]),
        (["p"], {"P": ["1", "2"]}, [{"p": "1"}, {"p": "2"}]),  # names match case-insensitively
        (["q", "p"], {"q": ["a"]}, [{"q": "a"}]),  # a prefix
        (["q", "p"], {"p": ["1"]}, []),  # no value for the first column: nothing pinned
        (["q", "p"], {"q": ["a", "b"], "p": ["1"]}, [{"q": "a", "p": "1"}, {"q": "b", "p": "1"}]),
        (["p"], {"id": ["1"]}, []),  # not a partition column
        (["p"], {"p": []}, []),
        ([], {"p": ["1"]}, []),
    ],
)
def test_pinned_specs(columns, constraints, expected):
    assert pinned_specs(columns, constraints) == expected


def test_too_many_pinned_partitions_lock_the_table():
    assert pinned_specs(["p"], {"p": [str(i) for i in range(MAX_PINNED + 1)]}) == []


def explain(facts):
    return sorted(LockService().explain(parse_facts(facts)))


def _delete(values, partition_columns=("p",)):
    table = {"kind": "table", "name": "catalogTable", "catalog": "spark_catalog"}
    table |= {"database": "default", "table": "d", "partitionColumns": []}
    pins = {"kind": "constraints", "name": "writtenRows"}
    pins |= {"partitionColumns": list(partition_columns), "values": values}
    return {"commandClass": DELETE, "command": "DeleteCommand", "fields": [table, pins]}


def test_a_pinned_delta_delete_locks_its_partitions_and_shares_the_table():
    assert explain(_delete({"p": ["1", "2"]})) == [
        ("default", "SHARED"),
        ("default@d", "SHARED"),
        ("default@d@p=1", "EXCLUSIVE"),
        ("default@d@p=2", "EXCLUSIVE"),
    ]


def test_an_unpinned_delta_delete_locks_the_table():
    assert explain(_delete({"id": ["1"]})) == [("default", "SHARED"), ("default@d", "EXCLUSIVE")]


def test_a_v2_insert_with_row_constraints_locks_its_partition():
    write = {"kind": "table", "catalog": "spark_catalog", "database": "default", "table": "d"}
    write |= {"partitionColumns": ["p"], "rowConstraints": {"p": ["1"]}}
    assert explain({"writes": [write]}) == [
        ("default", "SHARED"),
        ("default@d", "SHARED"),
        ("default@d@p=1", "EXCLUSIVE"),
    ]
