"""Counting the requests a ZooKeeper server receives, read from its ``mntr`` four-letter word.

The round-trip, coalescing and wide-release tests (and the benchmarks) assert how many requests
an operation costs; they all read the same counter, so it is read in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tests.support.zookeeper import four_letter

T = TypeVar("T")


def mntr(port: int) -> dict[str, str]:
    """The server's ``mntr`` answer as a dict (tab-separated ``key\\tvalue`` lines)."""
    text = four_letter(port, "mntr")
    return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)


def packets(port: int) -> int:
    """The server's ``zk_packets_received`` (every request; the mntr probe itself counts one)."""
    return int(mntr(port)["zk_packets_received"])


def counted(port: int, fn: Callable[[], T]) -> tuple[T, int]:
    """Run ``fn``; its result and the ZooKeeper requests it sent (the probe not counted)."""
    before = packets(port)
    result = fn()
    return result, packets(port) - before - 1
