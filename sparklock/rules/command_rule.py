"""The shape of a command-table row: what a command's field means for locking.

The rows themselves are :mod:`.commands`' table; :mod:`.policy` applies them to the facts and
:mod:`.command_docs` prints them. Kept apart so that a table of rules (Spark's, a connector's)
only imports this vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..locks.model import LockMode
from .command_classes import simple_name

S, X = LockMode.SHARED, LockMode.EXCLUSIVE

LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
COMMAND = "org.apache.spark.sql.execution.command."
SOURCES = "org.apache.spark.sql.execution.datasources."
HIVE = "org.apache.spark.sql.hive.execution."
DELTA = "org.apache.spark.sql.delta.commands."
STREAMING = "org.apache.spark.sql.execution.streaming.sources."

#: What the write rule locks for the classes the JVM reports under "writes" (see ``policy``)
WRITE_RULE = "EXCLUSIVE on what it writes: the write rule"
#: A v2 write into a relation the JVM cannot report as a write falls back to its "table" field
V2_WRITE_RULE = WRITE_RULE + "; the `table` target only if not reported as a write"


@dataclass(frozen=True)
class Target:
    """One field of a command and the lock it takes.

    ``field``: the case-class field name the JVM reports. ``mode``: the lock on the table, database
    or path named there. ``partitions``: a field holding partition spec(s) of that table; when it
    holds any, the table gets SHARED and each partition ``partition_mode`` instead (Hive's
    partition DDL rule). ``database_from``: a field whose catalog and database the name lives in,
    whatever the statement spelled (a rename's new name: Spark renames within the old name's
    database); a temporary view there makes this one temporary too (no lock). ``pinned_by``: a
    constraints field (the rows the command writes, ``facts.ConstraintsField``); where it fixes the
    table's leading partition columns to constants, the table gets SHARED and each partition so
    pinned ``mode`` instead (``pinning``), so writers of disjoint partitions run together.
    """

    field: str
    mode: LockMode
    partitions: str | None = None
    partition_mode: LockMode = X
    database_from: str | None = None
    pinned_by: str | None = None


@dataclass(frozen=True)
class FieldIs:
    """A condition on a scalar field of the command: its value is one of ``values``."""

    field: str
    values: frozenset[str]

    def __str__(self) -> str:
        return f"`{self.field}` is {' or '.join(sorted(self.values))}"


@dataclass(frozen=True)
class CommandRule:
    """One row: ``class_name`` is the full class name, ``command`` its simple name."""

    class_name: str
    targets: tuple[Target, ...]
    statement: str  # how users write it (docs/statements.md)
    note: str = ""
    #: no lock of the command's own when this holds (a temporary view's CREATE VIEW)
    no_lock_when: FieldIs | None = None

    @property
    def command(self) -> str:
        return simple_name(self.class_name)


def rule(
    class_name: str,
    statement: str,
    *targets: Target,
    note: str = "",
    no_lock_when: FieldIs | None = None,
) -> CommandRule:
    """One row, its targets as arguments (the table reads like the statements it lists)."""
    return CommandRule(class_name, tuple(targets), statement, note, no_lock_when)


TEMP_VIEW = FieldIs("viewType", frozenset({"LocalTempView", "GlobalTempView"}))
