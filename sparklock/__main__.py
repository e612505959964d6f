"""``python -m sparklock``: the same commands as the ``sparklock`` console script."""

from .cli import main

raise SystemExit(main(prog="python -m sparklock"))
