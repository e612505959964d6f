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


def test_a_new_sink_hears_each_backends_last_state_at_once(collected):
    """A gauge must not start wrong: a SparkContext created while a client is connected. Any
    backend reports through the same call (``etcd`` stands for one the registry does not have)."""
    telemetry.backend_state("zookeeper", "SUSPENDED")
    telemetry.backend_state("etcd", "LOST")
    telemetry.backend_state("zookeeper", "CONNECTED")
    assert collected[-1] == Report("ZOOKEEPER_STATE", 1, "CONNECTED")  # the name the JVM reads
    late: list[Report] = []
    telemetry.add_sink(late.append)
    try:
        assert Report("ZOOKEEPER_STATE", 1, "CONNECTED") in late
        assert Report("ETCD_STATE", 1, "LOST") in late
        assert Report("ZOOKEEPER_STATE", 1, "SUSPENDED") not in late
        assert telemetry.last_backend_state("etcd") == Report("ETCD_STATE", 1, "LOST")
    finally:
        telemetry.remove_sink(late.append)
        telemetry._states.pop("etcd", None)  # no made-up backend's state for later tests' JVMs


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
    # a gauge report (the defaults a new metric source starts with) crosses as it is
    default = Report(telemetry.BACKEND_STATE, 0, gauge)
    assert telemetry.for_jvm(default) == default
    assert telemetry.backend_state_defaults(["etcd"]) == [
        Report(telemetry.BACKEND_STATE, 0, "etcdConnected")
    ]
