"""The command table: Spark command class → which of its fields are locked, in which mode.

One row per analysed command class of Spark 4.x (v1 commands, v2 logical plans, Hive, Delta), read
as data, in the spirit of Kyuubi's authz table, keyed by full class name: the JVM reports the root
command's table-valued fields by name, this table says what each field means (a row's shape:
:mod:`.command_rule`). What the plan *reads* (queries inside CTAS, views, MERGE sources) is
locked SHARED by the read rules in ``policy``; the rows here add the command's own targets.
Every other command class of Spark is on the no-lock or the fail-safe list of
``command_classes`` (a test enumerates Spark's jars). The docs' statement table and lists are
generated from here by ``command_docs`` (``python3 -m sparklock.docs_pages --write``).
"""

from __future__ import annotations

from . import spark_ddl, spark_writes
from .command_classes import NO_LOCK
from .command_rule import CommandRule, Target, rule
from .delta import ROWS as DELTA_ROWS
from .iceberg import ROWS as ICEBERG_ROWS

#: The families of rows, in the docs' order. A new family (a format's or a catalog's commands,
#: in a module of its own) is one more entry here.
FAMILIES: tuple[tuple[CommandRule, ...], ...] = (
    spark_ddl.RULES,
    spark_writes.RULES,
    tuple(rule(c, s, *(Target(*t) for t in ts), note=n) for c, s, ts, n in DELTA_ROWS),
    tuple(rule(c, s, *(Target(*t) for t in ts), note=n) for c, s, ts, n in ICEBERG_ROWS),
)

RULES: tuple[CommandRule, ...] = tuple(r for family in FAMILIES for r in family)


def by_class(rules: tuple[CommandRule, ...]) -> dict[str, CommandRule]:
    """The rows by full class name; a class with two rows is a mistake (which one would win?)."""
    found: dict[str, CommandRule] = {}
    for r in rules:
        if r.class_name in found:
            raise ValueError(f"two rows of the command table for {r.class_name}")
        found[r.class_name] = r
    return found


BY_CLASS: dict[str, CommandRule] = by_class(RULES)
"""The rows by full class name: what the policy looks up (the facts' ``commandClass``)."""

NO_LOCK_CLASSES = frozenset(NO_LOCK)
"""Commands that touch no table or database of their own: never "unrecognised"."""
