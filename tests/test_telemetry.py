"""sparklock.telemetry without Spark: who gets the reports, and what a new listener is told."""

from __future__ import annotations

import json

import pytest

from sparklock import telemetry
from sparklock.protocol.messages import to_json
from sparklock.telemetry import Report


@pytest.fixture
def collected():
    got: list[Report] = []
    telemetry.add_sink(got.append)
    got.clear()  # what add_sink replayed is another test's business
    yield got
    telemetry.remove_sink(got.append)


def test_every_sink_gets_each_report(collected):
    telemetry.emit(telemetry.RELEASE_RETRIED)
    telemetry.emit(telemetry.LOCKS_LOST, 3, "q1")
    assert collected == [Report("RELEASE_RETRIED", 1, None), Report("LOCKS_LOST", 3, "q1")]


def test_a_new_sink_hears_the_last_zookeeper_state_at_once(collected):
    """A gauge must not start wrong: a SparkContext created while the client is connected."""
    telemetry.emit(telemetry.ZOOKEEPER_STATE, detail="SUSPENDED")
    telemetry.emit(telemetry.ZOOKEEPER_STATE, detail="CONNECTED")
    late: list[Report] = []
    telemetry.add_sink(late.append)
    try:
        assert late == [Report("ZOOKEEPER_STATE", 1, "CONNECTED")]
    finally:
        telemetry.remove_sink(late.append)


def test_a_failing_sink_stops_neither_the_emitter_nor_the_others(collected):
    def broken(report: Report) -> None:
        raise RuntimeError("sink down")

    telemetry.add_sink(broken)
    try:
        telemetry.emit(telemetry.RELEASE_RETRIED)  # no exception
    finally:
        telemetry.remove_sink(broken)
    assert collected == [Report("RELEASE_RETRIED", 1, None)]


def test_reports_are_written_as_the_jvm_reads_them():
    assert json.loads(to_json(Report("LOCKS_LOST", 2, "q"))) == {
        "event": "LOCKS_LOST",
        "count": 2,
        "detail": "q",
    }
    assert json.loads(to_json(Report("RELEASE_RETRIED"))) == {
        "event": "RELEASE_RETRIED",
        "count": 1,
    }


def test_the_jvm_hears_a_backend_state_as_a_named_gauge():
    """The JVM's metric source knows no backend: a state crosses as a gauge name and value."""
    gauge = "zookeeperConnected"
    connected = telemetry.for_jvm(Report("ZOOKEEPER_STATE", 1, "CONNECTED"))
    assert connected == Report(telemetry.BACKEND_STATE, 1, gauge)
    suspended = telemetry.for_jvm(Report("ZOOKEEPER_STATE", 1, "SUSPENDED"))
    assert suspended == Report(telemetry.BACKEND_STATE, 0, gauge)
    assert telemetry.for_jvm(Report("LOCKS_LOST", 3, "q1")) == Report("LOCKS_LOST", 3, "q1")
