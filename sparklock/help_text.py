"""Command-line help in plain words, from the docstrings the code keeps.

Module docstrings are written for the API pages, with reStructuredText markup (double back-quoted
literals, ``:mod:`` roles); a terminal shows that markup as noise, so ``--help`` texts pass
through here.
"""

from __future__ import annotations

import re

#: The name a user types: the console script; ``python -m sparklock`` gives the same commands.
PROG = "sparklock"

_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain(text: str) -> str:
    """``text`` without reStructuredText markup: literals and roles become their bare words."""
    return _LITERAL.sub(r"\1", _ROLE.sub(r"\1", text))


def summary(doc: str | None) -> str:
    """A docstring's first paragraph in plain words, led by the command's name as users type it."""
    first = plain((doc or "").strip().split("\n\n")[0])
    return re.sub(r"^python -m sparklock\b", PROG, first)
