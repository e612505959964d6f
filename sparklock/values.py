"""Spark-style configuration values: durations (``100ms``, ``4s``, ``2min``), booleans, integers,
choices, and the row that documents a key. Shared by the generic settings (``sparklock.config``)
and every backend's own section, so a bad value gets the same error naming the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ConfigError

PREFIX = "spark.sparklock."

_DURATION_UNITS = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$")
DURATION_ACCEPTS = "a duration such as 100ms, 4s, 2min (units us, ms, s, m, min, h, d; bare = ms)"


def parse_duration(key: str, value: str | float | int) -> float:
    """Seconds from a Spark-style duration; a bare number means milliseconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value) / 1000.0
    else:
        m = _DURATION_RE.match(str(value).lower())
        if not m or m.group(2) not in ("", *_DURATION_UNITS):
            raise ConfigError(key, value, DURATION_ACCEPTS)
        unit = _DURATION_UNITS.get(m.group(2), 1e-3)
        seconds = float(m.group(1)) * unit
    return seconds


def format_duration(seconds: float) -> str:
    ms = round(seconds * 1000)
    if ms % 60000 == 0 and ms:
        return f"{ms // 60000}min"
    if ms % 1000 == 0 and ms:
        return f"{ms // 1000}s"
    return f"{ms}ms"


def parse_bool(key: str, value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise ConfigError(key, value, "true or false")


def parse_int(key: str, value: str | int, minimum: int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = None
    if number is None or number < minimum:
        raise ConfigError(key, value, f"an integer >= {minimum}")
    return number


def parse_choice(key: str, value: str, choices: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in choices:
        raise ConfigError(key, value, " or ".join(choices))
    return text


@dataclass(frozen=True)
class ConfigKey:
    """One documented key: the docs' table and the unknown-key check are made of these."""

    key: str
    default: str
    doc: str
