"""The shim's version-specific sources and per-Spark jar (jvm-shim/BRIDGE.md, "Spark versions")."""

from __future__ import annotations

import zipfile

import pytest

from sparklock.spark import shim


def _chosen(spark: str, scala: str) -> dict[str, str]:
    return {d.parent.name: d.name for d in shim.compat_dirs(spark, scala)}


#: The variant of each aspect a Spark line takes (a table row per line: patch releases of one line
#: take the same variants).
SPARK_35 = {
    "connect": "3.5",
    "context": "3.5",
    "parser": "3.5",
    "procedures": "3.5",
    "scala": "2.12",
    "session": "3.5",
}
SPARK_40 = {
    "connect": "4.0",
    "context": "4.0",
    "parser": "4.0",
    "procedures": "4.0",
    "scala": "2.13",
    "session": "4.0",
}
SPARK_41 = {**SPARK_40, "parser": "4.1"}
SPARK_43 = {**SPARK_40, "parser": "4.3"}


@pytest.mark.parametrize(
    "spark,scala,expected",
    [
        ("3.5.0", "2.12", SPARK_35),
        ("3.5.9", "2.12", SPARK_35),
        ("4.0.1", "2.13", SPARK_40),
        ("4.1.4", "2.13", SPARK_41),
        ("4.2.0", "2.13", SPARK_41),
        ("4.3.0", "2.13", SPARK_43),
        ("4.3.1.dev0", "2.13", SPARK_43),
    ],
)
def test_each_aspect_takes_the_newest_variant_not_above_the_installed_version(
    spark, scala, expected
):
    assert _chosen(spark, scala) == expected


def test_a_spark_older_than_every_variant_is_refused():
    with pytest.raises(shim.ShimBuildError, match="pyspark 3.4.1 is older.*3.5.0 and later"):
        shim.compat_dirs("3.4.1", "2.12")


def test_every_variant_of_an_aspect_defines_the_same_classes():
    for aspect in shim.compat_root().iterdir():
        names = {
            v.name: sorted(f.name for f in v.rglob("*.java"))
            for v in aspect.iterdir()
            if v.is_dir()
        }
        assert len(set(map(tuple, names.values()))) == 1, names


def test_a_prebuilt_jar_for_another_spark_is_refused(tmp_path, monkeypatch):
    jar = tmp_path / "sparklock-shim.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr(
            "META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nSparklock-Spark-Version: 3.0.0\n"
        )
    assert shim.built_for(jar) == "3.0.0"
    monkeypatch.setenv("SPARKLOCK_SHIM_JAR", str(jar))
    with pytest.raises(shim.ShimBuildError, match="built for Spark 3.0.0, but pyspark"):
        shim.jar_path()
