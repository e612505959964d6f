"""What the lease tests share: ZooKeeper reached through a loopback proxy that can be silenced
(and healed, the session locking again), the session conf pointing a module's session there,
and waiting on a condition with a named deadline."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tests.support.spark import zookeeper_conf
from tests.support.tcp_proxy import TcpProxy

#: a short session, so that a silenced link lets the lease lapse within ~3 s
SESSION_TIMEOUT = "4s"


def lease_conf(proxy: TcpProxy, name: str) -> dict[str, str]:
    """Session conf: the ZooKeeper manager through ``proxy``, a namespace of its own."""
    return {
        **zookeeper_conf(f"127.0.0.1:{proxy.port}", f"{name}_{uuid.uuid4().hex[:8]}"),
        "spark.sparklock.zookeeper.sessionTimeout": SESSION_TIMEOUT,
    }


@contextmanager
def leased(session: Any, conf: Mapping[str, str]) -> Iterator[Any]:
    """``session`` with ``conf`` set (session conf, not the builder's: a context's conf outlives
    it as system properties) and the tests' slow UDFs registered; the conf unset after."""
    from tests.support.spark import register_udfs

    for key, value in conf.items():
        session.conf.set(key, value)
    register_udfs(session)
    try:
        yield session
    finally:
        for key in conf:
            session.conf.unset(key)


def in_background(action: Callable[[], object]) -> tuple[threading.Thread, dict[str, str]]:
    """``action`` (a statement) started on a thread; the dict gets ``ok`` or ``error`` (its
    text) when it ends."""
    outcome: dict[str, str] = {}

    def run() -> None:
        try:
            action()
            outcome["ok"] = "succeeded"
        except Exception as e:  # noqa: BLE001 - the answer under test
            outcome["error"] = str(e)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def data_files(spark: Any, table: str) -> list[str]:
    """The files a reader of ``table`` sees, relative to its location: committed output only
    (no staging below ``_temporary`` or ``.spark-staging``, no markers)."""
    from pathlib import Path
    from urllib.parse import urlparse

    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect()
    (location,) = [r.data_type for r in rows if r.col_name == "Location"]
    root = Path(urlparse(location).path)
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not any(part[0] in "._" for part in p.relative_to(root).parts)
    )


def heal_and_reconnect(spark: Any, proxy: TcpProxy) -> None:
    """Forward again, then :func:`reconnect`."""
    proxy.heal()
    reconnect(spark)


def reconnect(spark: Any) -> None:
    """A statement that started while the old session was still being retried fails with
    LOCK_MANAGER_UNAVAILABLE: try until one locks (a new session)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            spark.sql("SHOW LOCKS").collect()
            return
        except Exception:  # noqa: BLE001 - retried until the deadline
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``check`` every 20 ms; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
