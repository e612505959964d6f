"""``sparklock.configure(builder)``: the Spark session side of sparklock.

It puts the shim jar on ``spark.jars`` and the extension on ``spark.sql.extensions`` (both
appended to what the builder already has), and wraps *this builder's* ``getOrCreate`` so that the
session it returns already has the Python lock service attached to its JVM. Sessions made later
with ``newSession()`` share that JVM and need nothing more; so do other Python threads.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from typing import TYPE_CHECKING, Any

from ..errors import SparkLockSetupError

if TYPE_CHECKING:  # pyspark is imported only when a session is built
    from pyspark.sql import SparkSession

log = logging.getLogger("sparklock")
_attach_lock = threading.Lock()
COMMIT_PROTOCOL_KEY = "spark.sql.sources.commitProtocolClass"
_callbacks: dict[int, Any] = {}  # id(py4j gateway) -> PyLockCallback


def _append(current: Any, item: str) -> str:
    items = [x.strip() for x in str(current or "").split(",") if x.strip()]
    if item not in items:
        items.append(item)
    return ",".join(items)


def _last(current: Any, item: str) -> str:
    """``item`` moved (or added) to the end of a comma-separated list."""
    items = [x.strip() for x in str(current or "").split(",") if x.strip() and x.strip() != item]
    return ",".join([*items, item])


def _settle(builder: SparkSession.Builder, jar: str) -> None:
    """Just before the session starts: the settings of :func:`configure` still there, whatever
    the builder was given after it, and the extension last in ``spark.sql.extensions``.

    Another library's helper may have replaced a list after ``configure`` (a later
    ``.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")``). Last,
    because each extension's parser wraps the ones before it: the lock-statement parser must be
    the outermost, so that the statement ``EXPLAIN LOCKS`` explains is parsed by every other
    extension's parser (Delta's ``OPTIMIZE``, ``VACUUM``, ...) and not by Spark's alone.
    """
    from .. import shim

    options = builder._options
    builder.config("spark.jars", _append(options.get("spark.jars"), jar))
    builder.config(
        "spark.sql.extensions", _last(options.get("spark.sql.extensions"), shim.EXTENSION_CLASS)
    )
    builder.config("spark.plugins", _append(options.get("spark.plugins"), shim.PLUGIN_CLASS))


#: the list keys ``configure`` appends to; a builder value replaces spark-defaults.conf's
SEEDED_KEYS = ("spark.jars", "spark.sql.extensions", "spark.plugins")


def _seed_from_defaults(builder: SparkSession.Builder) -> None:
    """Start each list key this module appends to from ``spark-defaults.conf`` when the builder
    has none: the builder's value would replace the file's (Delta's extension there, a jar)
    instead of adding to it."""
    from .driver_classpath import spark_defaults_value

    for key in SEEDED_KEYS:
        if not builder._options.get(key) and (value := spark_defaults_value(key)):
            builder.config(key, value)


def configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Install sparklock into a ``SparkSession.Builder`` and return the same builder.

    It adds (appending to what the builder already has, or else to ``spark-defaults.conf``'s
    value, never replacing it):

    * ``spark.jars``: the sparklock shim jar (built from ``jvm-shim/`` on first use, see
      ``sparklock.shim``);
    * ``spark.driver.extraClassPath``: the same jar, when this process launches the driver JVM, so
      that the shim's classes stay loadable whatever class loader a server session closes
      (:mod:`sparklock.spark.driver_classpath`);
    * ``spark.sql.extensions``: ``io.sparklock.shim.SparkLockExtensions``, which takes the locks of
      every statement and parses the lock statements;
    * ``spark.sql.sources.commitProtocolClass``: ``io.sparklock.shim.LeaseCommitProtocol`` (unless
      the builder names one): Spark's own, with a staging area per job and the lease checked
      before a job's output becomes visible (docs/fencing.md); a session that changes it at
      runtime has its file writes refused (``INVALID_CONFIG``);
    * where the session will have Delta Lake (on the builder, in ``spark-defaults.conf`` or
      ``PYSPARK_SUBMIT_ARGS``), ``spark.delta.logStore.<scheme>.impl`` for each
      scheme the user chose no store for (and the Delta part's jar on ``spark.jars``): Delta's
      own store, with the lease checked before a commit file is written
      (:mod:`sparklock.spark.delta_commits`);
    * with ``manager=metastore``, for each Iceberg ``HiveCatalog`` on that metastore, when the
      session starts: Iceberg's own commit lock off, unless the user set it
      (:mod:`sparklock.spark.iceberg_hive`);
    * ``spark.plugins``: ``io.sparklock.shim.SparkLockPlugin``, which registers the ``sparklock``
      metric source with the driver's metrics system (docs/operations.md, "Metrics and events");
    * a wrapped ``getOrCreate`` on this builder only: the session it returns has the Python lock
      service attached to its JVM (:func:`attach`), its ``spark.sparklock.*`` values checked and
      its lock manager reached (:mod:`sparklock.spark.startup`: ``ConfigError`` /
      ``LockManagerUnavailableError`` from ``getOrCreate()``; a SparkContext this call started
      is stopped again, one that ran before is left running); it puts
      the three settings back if something replaced them after this call and makes the extension
      the last one (:func:`_settle`), so other libraries' helpers (Delta's
      ``configure_spark_with_delta_pip``, their extensions) compose before or after this call.

    Lock settings are ordinary ``spark.sparklock.*`` keys on the builder (``.config(...)``, see
    docs/configuration.md). Calling it twice is harmless. ``remote("local[...]")`` works
    (pyspark then starts a Connect server in this process, which gets the locks); a builder for a
    remote Connect server (``remote("sc://...")``) raises ``SPARKLOCK_SETUP_FAILED``: the locks are
    taken by the server's driver (``python -m sparklock connect-server``), not by a client.
    """
    from .. import shim
    from . import delta_commits, driver_classpath, iceberg_hive, startup

    options = getattr(builder, "_options", None)
    if options is None:
        raise SparkLockSetupError(
            f"sparklock.configure expects a pyspark SparkSession.Builder, got {type(builder)!r}"
        )
    remote = str(options.get("spark.remote") or "")
    in_process = remote.startswith("local")  # remote("local[2]"): a Connect server in-process
    if (remote and not in_process) or (options.get("spark.api.mode") == "connect" and not remote):
        raise SparkLockSetupError(
            "sparklock is installed in the driver that runs the statements: start a Connect "
            "server with `python -m sparklock connect-server` and connect to it with "
            "SparkSession.builder.remote('sc://host:port'), or use remote('local[...]')"
        )
    if in_process:
        from .connect import connect_conf

        connect_conf(options)
    _seed_from_defaults(builder)
    jar = str(shim.jar_path())
    builder.config("spark.jars", _append(options.get("spark.jars"), jar))
    driver_classpath.add_shim(options, builder, jar)
    builder.config(
        "spark.sql.extensions", _append(options.get("spark.sql.extensions"), shim.EXTENSION_CLASS)
    )
    builder.config("spark.plugins", _append(options.get("spark.plugins"), shim.PLUGIN_CLASS))
    if not options.get(COMMIT_PROTOCOL_KEY):  # a protocol of the user's own is kept (fencing.md)
        builder.config(COMMIT_PROTOCOL_KEY, shim.COMMIT_PROTOCOL_CLASS)
    original = builder.getOrCreate
    if getattr(original, "_sparklock_wrapped", False):
        return builder

    def getOrCreate() -> SparkSession:  # noqa: N802 - pyspark's name
        started_here = _running_context() is None
        jvm_started_here = _running_jvm() is None and not os.environ.get("PYSPARK_GATEWAY_PORT")
        _settle(builder, jar)
        _ensure_loadable(jar, shim.BRIDGE_CLASS)
        delta_jar = delta_commits.configure(builder, _running_jvm())
        if delta_jar is not None:
            _ensure_loadable(delta_jar, delta_commits.STORES["file"])
        with warnings.catch_warnings():
            # remote("local[...]"): the Connect client re-sends the builder's static options
            # (spark.jars, spark.sql.extensions, ...) to its session and warns that it cannot set
            # them; the in-process server was started with them.
            warnings.filterwarnings("ignore", message="Failed to set spark", category=UserWarning)
            session = original()
        try:
            if in_process:
                _attach_in_process_connect()
            else:
                attach(session)
                startup.check(session)  # ConfigError / LockManagerUnavailableError now, not later
                iceberg_hive.settle(session)  # Iceberg's commit lock off under sparklock's
                delta_commits.warn_if_unchecked(session)
        except BaseException:
            # Leave nothing behind: the next builder must not inherit the refused settings.
            if started_here:
                _stop_quietly(session)
            if jvm_started_here:
                _shut_down_jvm()
            raise
        return session

    getOrCreate._sparklock_wrapped = True  # type: ignore[attr-defined]
    getOrCreate.__doc__ = original.__doc__
    builder.getOrCreate = getOrCreate
    return builder


def _attach_in_process_connect() -> None:
    """``remote("local[...]")``: pyspark started a classic driver hosting the Connect service in
    this process; attach the lock service to it and mark it as serving Connect sessions."""
    from pyspark.sql.session import SparkSession as ClassicSession

    from . import startup
    from .connect import serve_connect

    classic = ClassicSession._instantiatedSession
    if classic is None:
        raise SparkLockSetupError("remote('local[...]') started no Spark driver in this process")
    attach(classic)
    serve_connect(classic)
    startup.check(classic)  # ConfigError / LockManagerUnavailableError now, not later


def _running_context() -> Any:
    """The SparkContext this process runs now (None: the next ``getOrCreate`` creates one)."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context


def _stop_quietly(session: Any) -> None:
    """Stop a session this ``getOrCreate`` started and then refused, with its SparkContext (for
    ``remote("local[...]")``: the classic driver it started in this process too)."""
    from pyspark.sql.session import SparkSession as ClassicSession

    stops = [session.stop, getattr(ClassicSession._instantiatedSession, "stop", None)]
    stops.append(getattr(_running_context(), "stop", None))
    for stop in stops:
        try:
            if stop is not None:
                stop()  # a second stop of the same context does nothing
        except Exception:  # noqa: BLE001 - the start-up error is what the caller must see
            log.debug("sparklock: stopping a refused session failed", exc_info=True)


def _shut_down_jvm() -> None:
    """End the JVM a refused ``getOrCreate`` launched. pyspark launched it with the builder's
    settings as ``--conf`` flags, which live on as the JVM's system properties: every later
    SparkConf of this process would read them (the refused key included). The next
    ``getOrCreate`` launches a JVM of its own settings."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    with _attach_lock:
        _callbacks.pop(id(gateway), None)
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the start-up error is what the caller must see
        log.debug("sparklock: shutting down a refused session's gateway failed", exc_info=True)
    if proc is not None:
        proc.stdin.close()  # the gateway JVM exits when its parent's pipe closes
        try:
            proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            proc.kill()
    SparkContext._gateway = None
    SparkContext._jvm = None


def _running_jvm() -> Any:
    """The JVM this process already runs (spark-submit's, or one a stopped context left), or
    None when the next ``getOrCreate`` launches it."""
    from pyspark import SparkContext

    return SparkContext._jvm if SparkContext._gateway is not None else None


def _ensure_loadable(jar: str, probe: str) -> None:
    """If this process already has a JVM, put the jar on the class loader Spark loads from.

    ``spark.jars`` reaches the driver's class path only when pyspark launches the JVM. Under
    ``spark-submit`` the driver JVM runs first and starts Python (``PYSPARK_GATEWAY_PORT`` names
    its gateway); in a notebook a stopped SparkContext leaves its JVM behind. In both, the gateway's
    threads carry spark-submit's ``MutableURLClassLoader`` as their context class loader, which
    is the loader Spark resolves ``spark.plugins`` and ``spark.sql.extensions`` through: adding
    the jar there before the SparkContext starts is what ``--jars`` would have done. ``probe``: a
    class of the jar (already loadable: nothing to do).
    """
    import os

    from pyspark import SparkContext

    if SparkContext._gateway is None:
        if not os.environ.get("PYSPARK_GATEWAY_PORT"):
            return  # pyspark launches the JVM with spark.jars on its class path
        SparkContext._ensure_initialized()  # connect to spark-submit's gateway; no context yet
    jvm = SparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(probe, False, loader)
        return
    except Exception:  # noqa: BLE001 - py4j raises Py4JJavaError for ClassNotFoundException
        pass
    url = jvm.java.io.File(jar).toURI().toURL()
    try:
        loader.addURL(url)
    except Exception as e:  # noqa: BLE001
        raise SparkLockSetupError(
            f"this Python process already runs a JVM whose class loader cannot take {jar}; "
            "call sparklock.configure(builder) before the first SparkSession is created, or "
            "pass the flags of `python -m sparklock submit-conf` to spark-submit"
        ) from e


def attach(spark: Any):
    """Attach the Python lock service to ``spark``'s JVM (idempotent, thread-safe).

    ``configure(builder).getOrCreate()`` calls it; call it yourself only for a session built
    another way with the extension installed. Returns the process's ``PyLockCallback``.
    """
    from py4j.java_gateway import JavaClass
    from pyspark.java_gateway import ensure_callback_server_started

    from .. import shim
    from ..service import sessions
    from . import exceptions, jvm_watch, locks_ui, telemetry_sink
    from .callback import PyLockCallback

    gateway = spark.sparkContext._gateway
    bridge = gateway.jvm.io.sparklock.shim.SparkLockBridge
    if not isinstance(bridge, JavaClass):
        raise SparkLockSetupError(
            f"the sparklock shim jar is not on the driver's class path ({shim.BRIDGE_CLASS} not "
            "found); create the session with sparklock.configure(builder)"
        )
    if not bridge.installed(spark._jsparkSession):
        raise SparkLockSetupError(
            "this SparkSession runs without the sparklock extension: a SparkContext was already "
            f"running without spark.sql.extensions={shim.EXTENSION_CLASS}, and static settings "
            "cannot change on a running context. Stop it (spark.stop()) and create the session "
            "with sparklock.configure(SparkSession.builder...).getOrCreate()"
        )
    with _attach_lock:
        callback = _callbacks.get(id(gateway))
        if callback is None:
            ensure_callback_server_started(gateway)
            callback = PyLockCallback()
            bridge.setCallback(callback)
            _callbacks[id(gateway)] = callback
            jvm_watch.watch(gateway)  # a JVM that dies leaves no statement's locks behind
        telemetry_sink.install(spark)  # the metric source, also where spark.plugins was replaced
        locks_ui.install(spark)  # the Spark UI's Locks tab, when the context has a UI
        exceptions.install()  # sparklock's JVM errors raise sparklock's Python classes
        sessions.install()  # LOCK TABLE grants per session (explicit.onApplicationEnd)
        return callback


def callback_of(spark: Any):
    """The callback attached to ``spark``'s JVM by this process, or None."""
    return _callbacks.get(id(spark.sparkContext._gateway))
