"""What a session is launched with outside its builder: ``spark-defaults.conf`` and the
``PYSPARK_SUBMIT_ARGS`` pyspark hands to ``spark-submit`` (``--packages``, ``--jars``,
``--conf``).

A library such as Delta may be configured there rather than on the builder (a cluster's
defaults file, ``--packages io.delta:...`` in a notebook's environment); what sparklock must set
for it (:mod:`sparklock.spark.delta_commits`) then depends on these too.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping

#: spark-submit's options that are a conf key under another name
_SUBMIT_FLAGS = {"--packages": "spark.jars.packages", "--jars": "spark.jars"}


def submit_args_conf(args: str) -> dict[str, str]:
    """The conf ``PYSPARK_SUBMIT_ARGS`` (``args``) sets: ``--conf k=v`` / ``-c k=v`` and the
    flags that stand for a key (``--packages``, ``--jars``); unparsable text sets nothing."""
    try:
        tokens = shlex.split(args)
    except ValueError:
        return {}
    out: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        flag, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        value = inline if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
        i += 1 if eq else 2
        if flag in ("--conf", "-c"):
            key, sep, conf_value = value.partition("=")
            if sep:
                out[key.strip()] = conf_value.strip()
        elif flag in _SUBMIT_FLAGS:
            out[_SUBMIT_FLAGS[flag]] = value
        elif not eq:
            i -= 1  # a flag without a value, or the trailing "pyspark-shell"
    return out


def outside_builder(keys: Iterable[str], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``keys`` as set outside the builder: ``spark-defaults.conf`` values, joined (comma) with
    ``PYSPARK_SUBMIT_ARGS``'s for the same key; absent keys are left out."""
    from .driver_classpath import spark_defaults_value

    environ = os.environ if env is None else env
    submitted = submit_args_conf(environ.get("PYSPARK_SUBMIT_ARGS", ""))
    out = {}
    for key in keys:
        values = [v for v in (spark_defaults_value(key), submitted.get(key, "")) if v]
        if values:
            out[key] = ",".join(values)
    return out
