"""sparklock's JVM errors raised in Python as sparklock's own classes.

PySpark turns every JVM exception that crosses py4j into a Python one in
``pyspark.errors.exceptions.captured.convert_exception`` (the same function on 3.5 and 4.x; the
py4j return-value hook calls it through the module, at each failure). Exceptions it does not know
(sparklock's ``SparkLockException`` among them) come out as a bare ``Py4JJavaError`` whose text
is the whole Java stack. :func:`install` wraps that function once: when the JVM exception, or one
of its causes, is a ``SparkLockException``, the result is the
:class:`~sparklock.errors.SparkLockError` subclass of its condition, built from the condition
and message parameters the JVM kept (:func:`sparklock.errors.from_failure`). PySpark then raises
it ``from None``, as it does its own errors: the Java stack is logged at DEBUG on the
``sparklock`` logger and kept as the error's ``java_stack`` attribute.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..errors import SparkLockError, from_failure
from ..failures import Failure

log = logging.getLogger("sparklock")

#: The JVM class whose instances become sparklock's Python errors.
JVM_CLASS = "io.sparklock.shim.wire.SparkLockException"

_install_lock = threading.Lock()

#: How deep the cause chain is searched (Spark wraps failures a few levels at most).
_MAX_CAUSES = 8


def sparklock_cause(java_exception: Any) -> Any:
    """The ``SparkLockException`` that is ``java_exception`` or one of its causes, or None."""
    current = java_exception
    for _ in range(_MAX_CAUSES):
        if current is None:
            return None
        if current.getClass().getName() == JVM_CLASS:
            return current
        current = current.getCause()
    return None


def converted(found: Any) -> SparkLockError:
    """The Python error of a JVM ``SparkLockException``."""
    error = from_failure(str(found.getMessage()), Failure.from_wire(str(found.failureJson())))
    stack = _stack_of(found)
    error.java_stack = stack  # type: ignore[attr-defined]
    log.debug("sparklock: %s raised in the JVM:\n%s", error.getCondition(), stack)
    return error


def _stack_of(java_exception: Any) -> str:
    from pyspark import SparkContext

    try:
        return str(SparkContext._jvm.org.apache.spark.util.Utils.exceptionString(java_exception))
    except Exception:  # noqa: BLE001 - the stack is a debugging aid, never a second failure
        return ""


def install() -> None:
    """Wrap PySpark's conversion of JVM exceptions once per process (idempotent)."""
    from pyspark.errors.exceptions import captured

    with _install_lock:
        original = captured.convert_exception
        if getattr(original, "_sparklock", False):
            return

        def convert_exception(e: Any) -> Any:
            try:
                found = sparklock_cause(e)
            except Exception:  # noqa: BLE001 - a broken gateway: let PySpark report it
                found = None
            if found is None:
                return original(e)
            return converted(found)

        convert_exception._sparklock = True  # type: ignore[attr-defined]
        convert_exception.__doc__ = original.__doc__
        captured.convert_exception = convert_exception
