"""The generated parts of the docs site, rendered from the code they describe.

Each page in ``PAGES`` holds blocks between ``<!-- name:start -->`` and ``<!-- name:end -->``
markers whose text comes from the code: the statement table and lists from ``commands.RULES``
and ``command_classes``, the configuration reference from ``config.KEYS``, the error
conditions from ``failures.Condition``. The prose around
the blocks is written by hand. ``python3 -m sparklock.docs_pages --write`` rewrites the blocks in
place; a test renders them in memory and fails when a page differs, so the docs cannot drift.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from .config import KEYS
from .errors import error_class
from .failures import Condition
from .rules.command_docs import markdown_lists, markdown_table


def config_table() -> str:
    """The configuration reference: every key with its default and meaning."""
    lines = ["| key | default | meaning |", "|---|---|---|"]
    for k in KEYS:
        lines.append(f"| `{k.key}` | `{k.default}` | {k.doc} |")
    return "\n".join(lines)


def error_table() -> str:
    """The error conditions: SQLSTATE, the Python class raised, what it means."""
    lines = ["| condition | SQLSTATE | Python class | meaning |", "|---|---|---|---|"]
    for c in Condition:
        cls = error_class(c.name).__name__
        lines.append(f"| `{c.name}` | `{c.sql_state}` | `sparklock.errors.{cls}` | {c.meaning} |")
    return "\n".join(lines)


# page (relative to the repository) -> marker name -> generator of the block's text
PAGES: dict[str, dict[str, Callable[[], str]]] = {
    "docs/statements.md": {"command-table": markdown_table, "command-lists": markdown_lists},
    "docs/configuration.md": {"config-table": config_table},
    "docs/errors.md": {"error-table": error_table},
}

REPO = Path(__file__).resolve().parents[1]


def render(text: str, blocks: dict[str, Callable[[], str]]) -> str:
    """``text`` with every generated block replaced by what the code generates now."""
    for name, generate in blocks.items():
        start, end = f"<!-- {name}:start -->\n", f"\n<!-- {name}:end -->"
        if start not in text or end not in text:
            raise ValueError(f"markers of the generated block {name!r} are missing")
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + start + generate() + end + tail
    return text


def stale_pages(root: Path = REPO) -> list[str]:
    """The pages whose generated blocks differ from what the code generates now."""
    return [
        page
        for page, blocks in PAGES.items()
        if render((root / page).read_text(), blocks) != (root / page).read_text()
    ]


def main(argv: list[str]) -> int:
    """``--write``: rewrite the blocks in place; ``--check``: exit 1 naming stale pages."""
    root = Path(argv[1]) if len(argv) > 1 else REPO
    if argv[:1] == ["--write"]:
        for page, blocks in PAGES.items():
            path = root / page
            path.write_text(render(path.read_text(), blocks))
        return 0
    if argv[:1] == ["--check"]:
        stale = stale_pages(root)
        for page in stale:
            print(f"stale: {page} (python3 -m sparklock.docs_pages --write)")
        return 1 if stale else 0
    print(markdown_table(), markdown_lists(), config_table(), sep="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
