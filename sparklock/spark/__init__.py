"""The Spark side: session configuration and the py4j callback the JVM shim calls.

Nothing here imports pyspark at import time.
"""

from __future__ import annotations

from .builder import attach, configure

__all__ = ["attach", "configure"]
