"""Which Spark the tests run on, and skips for what an older Spark lacks (README support matrix).

``python3 tests/versions.py VERSION`` runs the suite against another pyspark; a test of a
feature that version cannot have is skipped with a reason naming the version and the feature.
"""

from __future__ import annotations

import pyspark
import pytest

SPARK_VERSION: str = pyspark.__version__
SPARK_LINE: tuple[int, int] = tuple(int(x) for x in SPARK_VERSION.split(".")[:2])  # type: ignore[assignment]


def needs_spark(since: tuple[int, int], what: str) -> pytest.MarkDecorator:
    """Skip on a Spark older than ``since``: ``what`` does not exist there."""
    return pytest.mark.skipif(
        SPARK_LINE < since,
        reason=f"pyspark {SPARK_VERSION}: {what} needs Spark {since[0]}.{since[1]}+",
    )


def newest_line() -> bool:
    """Whether this is the newest Spark line the wheel carries a jar for: the line of CI's
    whole-suite run, where what repeats per backend runs for each backend (an older line runs
    the Spark-facing part once)."""
    from sparklock.shim import prebuilt
    from sparklock.shim.locate import version_tuple

    return SPARK_LINE == version_tuple(max(prebuilt.LINES, key=version_tuple))
