"""``python -m sparklock.shim``: print the shim jar for the running Spark (built if needed)."""

from . import main

raise SystemExit(main())
