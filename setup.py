"""Packaging hook: a wheel carries the JVM side (prebuilt shim jars and their Java sources).

Metadata lives in pyproject.toml. An editable install (``pip install -e .``) builds no jars: the
checkout compiles its own on first use (sparklock.shim). See docs/install.md, "Building the wheel".
"""

import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithJars(build_py):
    """build_py, then the per-line shim jars and the Java sources beside ``sparklock/shim``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        sys.path.insert(0, str(HERE))
        from sparklock.shim.package import build_jars

        shim = Path(self.build_lib) / "sparklock" / "shim"
        shutil.rmtree(shim / "src", ignore_errors=True)
        shutil.copytree(HERE / "jvm-shim" / "src", shim / "src")
        build_jars(shim / "jars")


setup(cmdclass={"build_py": BuildWithJars})
