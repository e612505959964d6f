"""``python -m sparklock``: see :mod:`sparklock.cli`."""

from .cli import main

raise SystemExit(main())
