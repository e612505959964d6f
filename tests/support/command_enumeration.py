"""Every concrete command class of the installed Spark, read from pyspark's jars.

The coverage test (``tests/test_command_coverage.py``) needs the set of classes that Spark can hand
to sparklock as a root command: every concrete implementation of catalyst's ``Command`` trait
(``RunnableCommand``/``LeafRunnableCommand``, ``DataWritingCommand``, the v2 ``Command``/
``V2WriteCommand``/DDL nodes, the Hive commands all extend it), and the statements Spark runs
while analysing them (``ExecutableDuringAnalysis``: ``CALL``, no ``Command``), and the streaming
write nodes (``WriteTo*`` plans of a ``streaming`` package: a micro-batch's root). Reading the class
files' headers (superclass, interfaces, access flags) with ``zipfile`` finds them without starting
a JVM or initialising a single class, so a new Spark version's new commands are found in a few
seconds.
"""

from __future__ import annotations

import functools
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

COMMAND = "org.apache.spark.sql.catalyst.plans.logical.Command"
EXECUTABLE = "org.apache.spark.sql.catalyst.plans.logical.ExecutableDuringAnalysis"
ROOTS = frozenset({COMMAND, EXECUTABLE})
LOGICAL_PLAN = "org.apache.spark.sql.catalyst.plans.logical.LogicalPlan"

_ACC_INTERFACE = 0x0200
_ACC_ABSTRACT = 0x0400
_ACC_SYNTHETIC = 0x1000

# constant-pool tag -> payload size in bytes (1 = Utf8: u2 length + bytes, handled apart)
_CP_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2}
_CP_SIZES.update({17: 4, 18: 4, 19: 2, 20: 2})


@dataclass(frozen=True)
class ClassHeader:
    """What a class file says about its place in the type hierarchy."""

    name: str  # binary name, dots (``a.b.C$Inner``)
    flags: int
    superclass: str | None
    interfaces: tuple[str, ...]

    @property
    def concrete(self) -> bool:
        return not self.flags & (_ACC_INTERFACE | _ACC_ABSTRACT | _ACC_SYNTHETIC)


def read_header(data: bytes) -> ClassHeader:
    """Parse a class file up to its interfaces (JVM spec §4.1); the rest is never needed."""
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    count = struct.unpack_from(">H", data, 8)[0]
    utf8: dict[int, str] = {}
    class_name_index: dict[int, int] = {}
    pos, i = 10, 1
    while i < count:
        tag = data[pos]
        if tag == 1:
            length = struct.unpack_from(">H", data, pos + 1)[0]
            utf8[i] = data[pos + 3 : pos + 3 + length].decode("utf-8", "replace")
            pos += 3 + length
        else:
            if tag == 7:
                class_name_index[i] = struct.unpack_from(">H", data, pos + 1)[0]
            pos += 1 + _CP_SIZES[tag]
        i += 2 if tag in (5, 6) else 1  # longs and doubles take two slots

    def cls(index: int) -> str | None:
        return utf8[class_name_index[index]].replace("/", ".") if index else None

    flags, this, sup, n = struct.unpack_from(">HHHH", data, pos)
    ifaces = struct.unpack_from(f">{n}H", data, pos + 8)
    return ClassHeader(cls(this) or "", flags, cls(sup), tuple(cls(j) or "" for j in ifaces))


def spark_jars() -> list[Path]:
    import pyspark

    return sorted((Path(pyspark.__file__).parent / "jars").glob("spark-*.jar"))


SPARK_SQL = ("org/apache/spark/sql/",)
DELTA = ("",)  # every class of a Delta jar: it adds some to Spark's own packages too


def _headers(jars: list[Path], prefixes: tuple[str, ...] = SPARK_SQL) -> dict[str, ClassHeader]:
    out: dict[str, ClassHeader] = {}
    for jar in jars:
        with zipfile.ZipFile(jar) as z:
            for entry in z.namelist():
                if not (entry.startswith(prefixes) and entry.endswith(".class")):
                    continue
                header = read_header(z.read(entry))
                out[header.name] = header
    return out


def _is_anonymous(name: str) -> bool:
    simple = name.rsplit(".", 1)[-1]
    return "$anon" in simple or "$$" in simple or any(p.isdigit() for p in simple.split("$")[1:])


@functools.lru_cache(maxsize=1)
def command_classes() -> frozenset[str]:
    """Full names of every concrete ``Command`` (or ``ExecutableDuringAnalysis``, or streaming
    write node) of the installed pyspark (objects without ``$``).

    Only ``org.apache.spark.sql`` packages are read: ``Command`` lives in catalyst, and a command
    outside that tree would have to extend it from another package of Spark SQL's own jars.
    """
    return _commands(_headers(spark_jars()))


def delta_command_classes(delta_jars: list[Path]) -> frozenset[str]:
    """The same for the classes of Delta's jars (``org.apache.spark.sql.delta``, ``io.delta``),
    their hierarchy read together with Spark's."""
    delta = _headers(delta_jars, DELTA)
    return frozenset(_commands({**_headers(spark_jars()), **delta}) & set(_names(delta)))


def delta_plan_classes(delta_jars: list[Path]) -> frozenset[str]:
    """The concrete logical plans of Delta's jars that are no command (what Delta's parser and
    analysis build before the commands: statements, time travel, Change Data Feed reads)."""
    delta = _headers(delta_jars, DELTA)
    headers = {**_headers(spark_jars()), **delta}

    is_plan = _plan_test(headers)

    plans = {
        n[:-1] if n.endswith("$") else n
        for n, h in delta.items()
        if h.concrete and not _is_anonymous(n) and is_plan(n)
    }
    return frozenset(plans - _commands(headers))


def _plan_test(headers: dict[str, ClassHeader]):
    """Whether a class of ``headers`` is a logical plan (extends ``LOGICAL_PLAN``), cached."""

    @functools.cache
    def is_plan(name: str | None) -> bool:
        if name is None or name not in headers or name == LOGICAL_PLAN:
            return name == LOGICAL_PLAN
        h = headers[name]
        return any(is_plan(s) for s in (h.superclass, *h.interfaces))

    return is_plan


def _names(headers: dict[str, ClassHeader]) -> set[str]:
    return {n[:-1] if n.endswith("$") else n for n in headers}


def _commands(headers: dict[str, ClassHeader]) -> frozenset[str]:
    """The concrete command (and streaming write) classes among ``headers``."""

    @functools.cache
    def is_command(name: str | None) -> bool:
        if name is None or name not in headers:
            return name in ROOTS
        h = headers[name]
        return name in ROOTS or any(is_command(s) for s in (h.superclass, *h.interfaces))

    is_plan = _plan_test(headers)

    def is_streaming_write(name: str) -> bool:
        package, _, simple = name.rpartition(".")
        return ".streaming" in package and simple.startswith("WriteTo") and is_plan(name)

    found = set()
    for name, h in headers.items():
        if (
            h.concrete
            and not _is_anonymous(name)
            and (is_command(name) or is_streaming_write(name))
        ):
            found.add(name[:-1] if name.endswith("$") else name)  # a Scala object's class
    return frozenset(found)


if __name__ == "__main__":
    for n in sorted(command_classes()):
        print(n)
