"""``python -m sparklock submit-conf``: the spark-submit flags that install sparklock's JVM side.

``sparklock.configure(builder)`` needs none of them (under spark-submit it adds the jar to the
running driver before the SparkContext starts); they are for setups that want the driver's class
path explicit (a platform's job definition, ``spark-defaults.conf``). The app still calls
``sparklock.configure(builder)``: that attaches the Python lock service. Executors need nothing.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from . import help_text
from .errors import SparkLockError


def submit_conf() -> dict[str, str]:
    """The settings, as ``spark.*`` keys (the jar for the installed Spark line)."""
    from . import shim

    return {
        "spark.jars": str(shim.jar_path()),
        "spark.sql.extensions": shim.EXTENSION_CLASS,
        "spark.plugins": shim.PLUGIN_CLASS,
    }


def render(conf: dict[str, str], properties: bool) -> str:
    if properties:
        return "\n".join(f"{k} {v}" for k, v in conf.items())
    flags = ["--jars", conf["spark.jars"]]
    for key, value in conf.items():
        if key != "spark.jars":
            flags += ["--conf", f"{key}={value}"]
    return shlex.join(flags)


def run(args: argparse.Namespace, out) -> int:
    try:
        print(render(submit_conf(), args.properties), file=out)
    except SparkLockError as e:
        print(str(e), file=sys.stderr)
        return 2
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit-conf",
        help="print the spark-submit flags (--jars/--conf) that install sparklock in a driver",
        description=help_text.summary(__doc__),
    )
    p.add_argument(
        "--properties",
        action="store_true",
        help="print spark-defaults.conf lines instead of command-line flags",
    )
    p.set_defaults(standalone=run)
