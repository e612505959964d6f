"""The README's command table and command lists, generated from the rules and lists.

``python3 -m sparklock.rules.command_docs --write`` rewrites the README blocks between
``<!-- command-table:start -->`` / ``<!-- command-lists:start -->`` and their ``:end`` markers;
the tests keep them equal to what this module generates, so the README cannot drift from
``commands.RULES`` and ``command_classes``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .command_classes import FAIL_SAFE, NO_LOCK, simple_name
from .commands import RULES, CommandRule


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
            parts.append(f"{t.mode.value} `{t.field}`{where}")
    text = "; ".join(parts) or "—"
    if rule.no_lock_when is not None:
        text += f"; nothing when {rule.no_lock_when}"
    return f"{text} ({rule.note})" if rule.note else text


def markdown_table() -> str:
    """The README's command table, generated from ``RULES`` so the two cannot drift."""
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
    """The README's no-lock and fail-safe lists, generated from ``command_classes``."""
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


# README marker name -> generator of what goes between ``<!-- name:start -->`` and ``:end -->``
README_BLOCKS = {"command-table": markdown_table, "command-lists": markdown_lists}


def render_readme(text: str) -> str:
    """``text`` with every generated block replaced by what the code generates now."""
    for name, generate in README_BLOCKS.items():
        start, end = f"<!-- {name}:start -->\n", f"\n<!-- {name}:end -->"
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + start + generate() + end + tail
    return text


def main(argv: list[str]) -> None:
    """Print the generated blocks, or with ``--write [README.md]`` rewrite them in place."""
    if argv and argv[0] == "--write":
        path = Path(argv[1] if len(argv) > 1 else "README.md")
        path.write_text(render_readme(path.read_text()))
        return
    print(markdown_table())
    print()
    print(markdown_lists())


if __name__ == "__main__":
    main(sys.argv[1:])
