"""What a new session checks before ``getOrCreate()`` returns it.

Without it a wrong setting surfaces at the first statement that takes locks, seconds or hours
later, far from where it was written. At start, every ``spark.sparklock.*`` value of the session
is parsed as each statement will parse it (:class:`~sparklock.errors.ConfigError` naming the key,
the accepted values, and for an unknown key the nearest real one), and with locking on, the lock
manager is reached once (:class:`~sparklock.errors.LockManagerUnavailableError` naming the address
and the cause). The connection made here is the process's shared one, so the first statement
does not pay for it again.
"""

from __future__ import annotations

from typing import Any

from ..config import SparkLockConfig


def session_conf(spark: Any) -> dict[str, str]:
    """The session's ``spark.sparklock.*`` entries, as the JVM hands them to each statement."""
    bridge = spark.sparkContext._gateway.jvm.io.sparklock.shim.SparkLockBridge
    return {str(k): str(v) for k, v in bridge.sessionConf(spark._jsparkSession).items()}


def check(spark: Any) -> SparkLockConfig:
    """Parse the session's settings and reach its lock manager; raises what a statement would."""
    from ..managers.registry import get_manager
    from ..service import config_of

    config = config_of(session_conf(spark))
    if config.enabled:
        get_manager(config).check_reachable()
    return config
