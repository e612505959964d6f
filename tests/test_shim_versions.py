"""The shim's version-specific sources and per-Spark jar (jvm-shim/BRIDGE.md, "Spark versions")."""

from __future__ import annotations

import zipfile

import pytest

from sparklock import shim
from sparklock.shim import prebuilt
from sparklock.shim.locate import spark_line


def _chosen(spark: str, scala: str) -> dict[str, str]:
    return {d.parent.name: d.name for d in shim.compat_dirs(spark, scala)}


#: The variant of each aspect a Spark line takes (a table row per line: patch releases of one line
#: take the same variants).
SPARK_35 = {
    "connect": "3.5",
    "context": "3.5",
    "immediate": "3.5",
    "parser": "3.5",
    "parser-additions": "3.5",
    "procedures": "3.5",
    "scala": "2.12",
    "servlet": "3.5",
    "session": "3.5",
}
SPARK_40 = {
    "connect": "4.0",
    "context": "4.0",
    "immediate": "3.5",
    "parser": "4.0",
    "parser-additions": "3.5",
    "procedures": "4.0",
    "scala": "2.13",
    "servlet": "4.0",
    "session": "4.0",
}
SPARK_41 = {**SPARK_40, "parser": "4.1"}
SPARK_42 = {**SPARK_41, "immediate": "4.2"}
SPARK_43 = {**SPARK_42, "parser-additions": "4.3"}


@pytest.mark.parametrize(
    "spark,scala,expected",
    [
        ("3.5.0", "2.12", SPARK_35),
        ("3.5.9", "2.12", SPARK_35),
        ("4.0.1", "2.13", SPARK_40),
        ("4.1.4", "2.13", SPARK_41),
        ("4.2.0", "2.13", SPARK_42),
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


# -- the jars a wheel carries (sparklock.shim.prebuilt) -----------------------------------------
def _jar(path, spark: str, bridge: bool = True):
    with zipfile.ZipFile(path, "w") as z:
        manifest = f"Manifest-Version: 1.0\nSparklock-Spark-Version: {spark}\n"
        z.writestr("META-INF/MANIFEST.MF", manifest)
        if bridge:
            z.writestr(prebuilt.BRIDGE_ENTRY, b"\xca\xfe\xba\xbe")
    return path


@pytest.fixture
def packaged(tmp_path, monkeypatch):
    """A jars directory as a wheel has it, in place of this checkout's (which has none)."""
    jars = tmp_path / "jars"
    jars.mkdir()
    monkeypatch.setattr(prebuilt, "jars_dir", lambda: jars)
    monkeypatch.delenv("SPARKLOCK_SHIM_JAR", raising=False)
    return jars


def test_the_running_spark_line_picks_the_packaged_jar(packaged):
    line = spark_line(shim.spark_version())
    (packaged / prebuilt.INDEX).write_text(f"3.5\n{line}\n")
    jar = _jar(packaged / prebuilt.jar_name(line), f"{line}.0")
    assert shim.jar_path() == jar


@pytest.mark.parametrize(
    "damage,says",
    [
        ("missing", "is missing (looked for"),
        ("truncated", "is unreadable"),
        ("no bridge", "is corrupt (io/sparklock/shim/SparkLockBridge.class is missing)"),
        ("other line", "was built for Spark 3.4.1, not"),
    ],
)
def test_a_broken_packaged_jar_fails_in_one_line_naming_spark_and_the_fix(packaged, damage, says):
    version = shim.spark_version()
    line = spark_line(version)
    (packaged / prebuilt.INDEX).write_text(f"{line}\n")
    jar = packaged / prebuilt.jar_name(line)
    if damage != "missing":
        _jar(jar, "3.4.1" if damage == "other line" else version, bridge=damage != "no bridge")
    if damage == "truncated":
        jar.write_bytes(jar.read_bytes()[:40])
    with pytest.raises(shim.ShimBuildError) as e:
        shim.jar_path()
    text = str(e.value)
    assert text.startswith(f"SHIM_BUILD_FAILED: Spark {version}: ") and "\n" not in text
    assert says in text and "pip install --force-reinstall sparklock" in text


def test_a_spark_the_wheel_has_no_jar_for_and_no_javac_says_what_to_do(
    packaged, tmp_path, monkeypatch
):
    version = shim.spark_version()
    other = "3.5" if spark_line(version) != "3.5" else "4.3"
    (packaged / prebuilt.INDEX).write_text(f"{other}\n")
    monkeypatch.setenv("SPARKLOCK_SHIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(shim.ShimBuildError) as e:
        shim.jar_path()
    text = str(e.value)
    assert text.startswith(f"SHIM_BUILD_FAILED: Spark {version}: no sparklock jar for Spark ")
    assert f"carries jars for Spark {other} only" in text and "javac was not found" in text
    assert "\n" not in text and not (tmp_path / "cache").exists()
