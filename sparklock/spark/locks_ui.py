"""The Spark UI's Locks tab (``io.sparklock.shim.ui``): added when sparklock attaches to a
context that has a live UI, once per context. The page asks the callback for its data
(``locksSnapshot``, :mod:`sparklock.service.snapshot`) whenever it is read."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("sparklock")


def install(spark: Any) -> bool:
    """Add the Locks tab to ``spark``'s UI (idempotent); whether the UI has it. Never raises: a
    UI that cannot take the tab must not cost the user their session."""
    try:
        sc = spark.sparkContext
        return bool(sc._jvm.io.sparklock.shim.SparkLockBridge.attachLocksTab(sc._jsc.sc()))
    except Exception as e:  # noqa: BLE001 - the tab is a convenience, the session is not
        log.warning("sparklock: the Locks tab could not be added to the Spark UI: %s", e)
        return False
