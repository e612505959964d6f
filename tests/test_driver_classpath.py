"""The shim jar joins the driver's class path without dropping the user's own entries, whether
they come from the builder or from ``spark-defaults.conf`` (which a builder value would hide)."""

from __future__ import annotations

import os

from sparklock.spark.driver_classpath import KEY, driver_classpath

JAR = "/opt/sparklock-shim.jar"


def test_the_jar_alone_when_nobody_set_a_class_path(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))  # no spark-defaults.conf there
    assert driver_classpath({}, JAR) == JAR


def test_the_builders_entries_stay_in_front_and_the_jar_is_added_once(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    user = os.pathsep.join(["/u/a.jar", "/u/classes"])
    assert driver_classpath({KEY: user}, JAR) == os.pathsep.join([user, JAR])
    twice = driver_classpath({KEY: driver_classpath({KEY: user}, JAR)}, JAR)
    assert twice == os.pathsep.join([user, JAR])


def test_spark_defaults_entries_are_kept_when_the_builder_has_none(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    (tmp_path / "spark-defaults.conf").write_text(
        "# a comment\n"
        "spark.driver.extraClassPathX   /not/this.jar\n"
        f"spark.driver.extraClassPath     /site/jdbc.jar{os.pathsep}/site/udfs.jar\n"
    )
    assert driver_classpath({}, JAR) == os.pathsep.join(["/site/jdbc.jar", "/site/udfs.jar", JAR])
    # the builder's own value wins over the file, as it does in the launcher
    assert driver_classpath({KEY: "/u/a.jar"}, JAR) == os.pathsep.join(["/u/a.jar", JAR])


def test_properties_file_separators(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.extraClassPath=/site/x.jar\n")
    assert driver_classpath({}, JAR) == os.pathsep.join(["/site/x.jar", JAR])
