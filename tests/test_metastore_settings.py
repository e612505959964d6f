"""``spark.sparklock.metastore.*``: URIs (default: the session's own), durations, Hive times."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sparklock.errors import ConfigError
from sparklock.managers.metastore.settings import (
    MetastoreSettings,
    parse_hive_time,
    parse_uris,
)


def test_uris_default_to_the_session_s_hive_metastore_uris():
    conf = {"spark.hadoop.hive.metastore.uris": "thrift://hms-1:9083,thrift://hms-2:9084"}
    assert MetastoreSettings.from_conf(conf).uris == "thrift://hms-1:9083,thrift://hms-2:9084"
    own = {**conf, "spark.sparklock.metastore.uris": "thrift://mine:1"}
    assert MetastoreSettings.from_conf(own).uris == "thrift://mine:1"
    assert parse_uris("thrift://a:1, b") == [("a", 1), ("b", 9083)]


@pytest.mark.parametrize("bad", ["http://hms:9083", "thrift://", " , "])
def test_bad_uris_name_the_key(bad):
    with pytest.raises(ConfigError, match="spark.sparklock.metastore.uris"):
        MetastoreSettings.from_conf({"spark.sparklock.metastore.uris": bad})


def test_durations_are_spark_style_and_derived_ones_stay_unset():
    s = MetastoreSettings.from_conf(
        {
            "spark.sparklock.metastore.socketTimeout": "5s",
            "spark.sparklock.metastore.txnTimeout": "2min",
        }
    )
    assert (s.socket_timeout, s.txn_timeout, s.heartbeat_interval, s.lease_margin) == (
        5.0,
        120.0,
        None,
        None,
    )
    with pytest.raises(ConfigError, match="leaseMargin"):
        MetastoreSettings.from_conf({"spark.sparklock.metastore.leaseMargin": "0s"})


@pytest.mark.parametrize(
    "value,seconds", [("300s", 300), ("300", 300), ("5min", 300), ("1500ms", 1.5), ("1h", 3600)]
)
def test_hive_time_values(value, seconds):
    assert parse_hive_time(value) == seconds


def test_settings_need_no_thrift():
    """The registry parses every backend's section for every conf: no optional import then."""
    code = (
        "import sys, sparklock.managers.metastore as m; m.MetastoreSettings.from_conf({}); "
        "print('thrift' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_lease_margin_is_checked_against_the_txn_timeout():
    """The margin is the JVM's whole time to fence before the metastore could expire a request,
    so it has a floor (a tenth of the timeout); and it must leave the lease running past the
    next heartbeat, or a healthy driver would fence itself."""
    timeout = {"spark.sparklock.metastore.txnTimeout": "10s"}
    margin = "spark.sparklock.metastore.leaseMargin"
    assert MetastoreSettings.from_conf(timeout).timing(10.0) == (10 / 3, 1.0)
    assert MetastoreSettings.from_conf({**timeout, margin: "6s"}).lease_margin == 6.0
    for bad in ("999ms", "6700ms"):
        with pytest.raises(ConfigError) as err:
            MetastoreSettings.from_conf({**timeout, margin: bad})
        text = str(err.value)
        assert margin in text and "at least txnTimeout/10 (1s)" in text, text
    interval = "spark.sparklock.metastore.heartbeatInterval"
    with pytest.raises(ConfigError, match="heartbeatInterval"):
        MetastoreSettings.from_conf({**timeout, interval: "9500ms"})
    # the metastore's own timeout, asked at session start, is checked the same way
    with pytest.raises(ConfigError, match="leaseMargin"):
        MetastoreSettings.from_conf({margin: "20s"}).timing(300.0 / 20)
