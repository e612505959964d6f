"""The live figures of a running JVM, read with the JDK's own tools (``jcmd``, ``jstat``): what a
soak watches to tell a leak from a warm-up. The heap is measured right after a full GC so the
figure is what stays reachable, not what the collector has not got to yet."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

_USED = re.compile(r"used (\d+)K")


def java_child(pid: int) -> int:
    """The ``java`` process started by process ``pid`` (a Python driver's py4j gateway JVM)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:  # the process ended while we looked
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, the fields after ")" do not
        ppid = int(text.rsplit(")", 1)[1].split()[1])
        if ppid == pid and cmdline and cmdline[0].endswith(b"java"):
            return int(stat.parent.name)
    raise LookupError(f"no java child of process {pid}")


def _jcmd(pid: int, *command: str) -> str:
    proc = subprocess.run(
        ["jcmd", str(pid), *command], capture_output=True, text=True, timeout=120, check=True
    )
    return proc.stdout


@dataclass(frozen=True)
class JvmSample:
    """One reading: heap still used after a full GC (MiB) and classes loaded now."""

    heap_mib: float
    classes: int


def sample(pid: int) -> JvmSample:
    """Runs a full GC in ``pid``, then reads its heap and its live class count."""
    _jcmd(pid, "GC.run")
    used = _USED.search(_jcmd(pid, "GC.heap_info"))
    if used is None:
        raise ValueError(f"GC.heap_info of {pid} has no 'used' figure")
    # jstat -class: Loaded Bytes Unloaded Bytes Time; loaded minus unloaded is what is live now
    out = subprocess.run(
        ["jstat", "-class", str(pid)], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    loaded, unloaded = int(out[5]), int(out[7])
    return JvmSample(heap_mib=int(used.group(1)) / 1024, classes=loaded - unloaded)
