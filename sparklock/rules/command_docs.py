"""The statement table and command lists of ``docs/statements.md``, from the rules and lists.

``docs_pages`` puts them between their markers (``python3 -m sparklock.docs_pages --write``); a
test keeps the page equal to what this module generates, so the docs cannot drift from
``commands.RULES`` and ``command_classes``.
"""

from __future__ import annotations

from .command_classes import FAIL_SAFE, NO_LOCK, simple_name
from .command_rule import CommandRule
from .commands import RULES


def _describe(rule: CommandRule) -> str:
    parts = []
    for t in rule.targets:
        if t.partitions:
            parts.append(
                f"{t.mode.value} `{t.field}`, or SHARED table + {t.partition_mode.value} "
                f"partitions of `{t.partitions}`"
            )
        else:
            where = f" in the database of `{t.database_from}`" if t.database_from else ""
            pinned = (
                f", or SHARED table + {t.mode.value} partitions `{t.pinned_by}` pins"
                if t.pinned_by
                else ""
            )
            parts.append(f"{t.mode.value} `{t.field}`{where}{pinned}")
    text = "; ".join(parts) or "—"
    if rule.no_lock_when is not None:
        text += f"; nothing when {rule.no_lock_when}"
    return f"{text} ({rule.note})" if rule.note else text


def markdown_table() -> str:
    """The statement table, generated from ``RULES`` so the two cannot drift."""
    lines = [
        "| statement | command class | locks (besides SHARED on everything it reads) |",
        "|---|---|---|",
    ]
    for r in RULES:
        lines.append(f"| `{r.statement}` | `{r.command}` | {_describe(r)} |")
    return "\n".join(lines)


def _class_list(entries: dict[str, str], header: str) -> str:
    lines = [f"| command class | {header} |", "|---|---|"]
    for name in sorted(entries, key=lambda n: (simple_name(n), n)):
        lines.append(f"| `{simple_name(name)}` | {entries[name]} |")
    return "\n".join(lines)


def markdown_lists() -> str:
    """The no-lock and fail-safe lists, generated from ``command_classes``."""
    return "\n".join(
        [
            f"No lock of their own ({len(NO_LOCK)} classes; what they read is still locked):",
            "",
            _class_list(NO_LOCK, "why no lock"),
            "",
            f"Fail safe: EXCLUSIVE on every table and database they name ({len(FAIL_SAFE)} "
            "classes):",
            "",
            _class_list(FAIL_SAFE, "why that is acceptable, or what is missing"),
        ]
    )
