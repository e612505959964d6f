"""Building the kazoo client from the security settings, and its first connection, diagnosed.

kazoo retries a failed connection forever and tells only its log why: a certificate the trust
store does not accept, a server that speaks no TLS, a SASL password the server refused. Left
alone, a statement would wait out the whole connection timeout and then say "time-out". Here the
client's log is watched (a :class:`ConnectionWatch` is its logger), so a TLS failure on every
server of the quorum or a refused SASL login ends the first connection at once, with an error
naming the ``spark.sparklock.zookeeper.*`` key to fix. Secrets never reach a message.
"""

from __future__ import annotations

import logging
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, KazooException, NoAuthError

from ....errors import LockManagerUnavailableError
from .clock import clock_of
from .polling import handler
from .security import (
    ACL_KEY,
    AUTH,
    AUTH_PASSWORD,
    SSL_CA,
    SSL_CERT,
    SSL_ENABLED,
    SSL_HOSTNAME,
    ZooKeeperSecurity,
)

#: How often the first connection is checked for success or a diagnosed failure.
POLL = 0.02

#: How long every server of the quorum must have refused connections (nothing listens on the
#: port) before the first connection gives up: long enough to ride out a server's restart,
#: short enough that a wrong address fails at once instead of after the connection timeout.
REFUSED_GRACE = 1.0

# kazoo logs every dropped connection at WARNING ("Connection dropped: ..."); with no handler
# configured anywhere, Python's last-resort handler would print each one on stderr. A library's
# loggers get a NullHandler: the lines reach the user's handlers when logging is configured.
logging.getLogger("kazoo").addHandler(logging.NullHandler())


class ConnectionWatch(logging.LoggerAdapter):
    """kazoo's logger for one client: passes everything on to ``kazoo.client`` with the
    secrets masked (kazoo logs every request at DEBUG, its ``Auth`` packet with the digest
    password too), and remembers the failures that retrying cannot cure (TLS refused per host,
    SASL refused)."""

    def __init__(self, hosts: int, secrets: tuple[str, ...] = ()) -> None:
        super().__init__(logging.getLogger("kazoo.client"), {})
        self.hosts = max(1, hosts)
        self._secrets = tuple(s for s in secrets if s)
        self.tls_failures: dict[str, str] = {}  # host:port -> the TLS error
        self.dropped = ""  # the last dropped connection, whatever the cause
        self.refused: dict[str, str] = {}  # host:port -> the OS error (nothing listens there)
        self._first_refusal: float | None = None
        self.auth_failed = False
        self.fatal = threading.Event()
        self._host = ""

    def log(self, level, msg, *args, **kwargs) -> None:  # noqa: D102 - logging's signature
        if self._secrets:
            msg, args = self._mask(msg), tuple(self._mask(a) for a in args)
        try:
            self._watch(str(msg), args)
        finally:
            kwargs.setdefault("stacklevel", 2)  # records name kazoo's line, not this one
            super().log(level, msg, *args, **kwargs)

    def _mask(self, value: object) -> object:
        """``value``, as text with every secret replaced if it shows one."""
        if isinstance(value, (int, float)) or value is None:
            return value
        text = str(value)
        if not any(secret in text for secret in self._secrets):
            return value
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _watch(self, msg: str, args: tuple) -> None:
        if msg.startswith("Connecting to") and len(args) >= 3:
            self._host = f"{args[0]}:{args[2]}"
        elif msg.startswith("Connection dropped") and args:
            self.dropped = str(args[0])
            if "refused" in self.dropped.lower():
                self.refused[self._host] = self.dropped
                if self._first_refusal is None:
                    self._first_refusal = time.monotonic()
            if "SSL" in self.dropped or "certificate" in self.dropped.lower():
                self.tls_failures[self._host] = self.dropped
                if len(self.tls_failures) >= self.hosts:
                    self.fatal.set()
        elif msg.startswith("AUTH_FAILED"):
            self.auth_failed = True
            self.fatal.set()

    def refused_everywhere(self, grace: float) -> bool:
        """Whether every server of the quorum has refused connections for ``grace`` seconds."""
        first = self._first_refusal
        return (
            first is not None
            and len(self.refused) >= self.hosts
            and time.monotonic() - first >= grace
        )


def new_client(
    quorum: str, session_timeout: float, security: ZooKeeperSecurity
) -> tuple[KazooClient, ConnectionWatch]:
    """A kazoo client for ``quorum`` with TLS, credentials and the default ACL of ``security``."""
    hosts = len({h.strip() for h in quorum.split("/", 1)[0].split(",") if h.strip()})
    watch = ConnectionWatch(hosts, security.secrets())
    client = KazooClient(
        hosts=quorum,
        timeout=session_timeout,
        connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 1.0},
        logger=watch,
        handler=handler(),  # kazoo's, with a cheaper select (see .polling)
        **security.kazoo_options(),
    )
    clock_of(client)  # from its first write: counted, and each multi's zxid kept (see .clock)
    return client, watch


def start(
    client: KazooClient,
    watch: ConnectionWatch,
    quorum: str,
    timeout: float,
    security: ZooKeeperSecurity,
) -> None:
    """Connect and authenticate within ``timeout``, or raise LOCK_MANAGER_UNAVAILABLE naming
    what to fix. Success means one request answered: SASL runs after the session is made, so
    a client is "connected" before the server has accepted its credentials."""
    deadline = time.monotonic() + timeout
    client.start_async()
    while time.monotonic() < deadline and not watch.fatal.is_set():
        if watch.refused_everywhere(REFUSED_GRACE):
            break
        if client.connected:
            try:
                client.exists_async("/").get(timeout=max(0.01, deadline - time.monotonic()))
                return
            except AuthFailedError:
                watch.auth_failed = True
                break
            except (KazooException, client.handler.timeout_exception):
                pass  # dropped meanwhile: kazoo reconnects, keep waiting
        watch.fatal.wait(POLL)
    raise LockManagerUnavailableError(diagnose(watch, quorum, timeout, security))


def diagnose(
    watch: ConnectionWatch, quorum: str, timeout: float, security: ZooKeeperSecurity
) -> str:
    """Why the first connection failed, naming the keys to look at."""
    tls = security.tls
    if watch.auth_failed:
        return (
            f"ZooKeeper {quorum} refused the credentials of {AUTH}={security.auth.identity()} "
            f"(SASL authentication failed: check the user and {AUTH_PASSWORD}, or the "
            f"Kerberos ticket)"
        )
    if watch.tls_failures:
        error = next(iter(watch.tls_failures.values()))
        lowered = error.lower()
        if "wrong_version_number" in lowered or "wrong version number" in lowered:
            hint = (
                f"the server does not speak TLS on that port: use its secureClientPort, "
                f"or {SSL_ENABLED}=false"
            )
        elif "mismatch" in lowered or "hostname" in lowered:
            hint = (
                f"the server's certificate does not name the host in the quorum: fix the "
                f"quorum or the certificate, or set {SSL_HOSTNAME}=false"
            )
        elif "eof" in lowered:
            hint = (
                f"the server closed the connection during the TLS handshake: a port without "
                f"TLS (use the secureClientPort) or a client certificate it does not accept "
                f"({SSL_CERT})"
            )
        elif "certificate verify failed" in lowered:
            trusted = tls.ca or "the system's CAs"
            hint = f"the server's certificate is not signed by a CA in {SSL_CA} ({trusted})"
        else:
            hint = (
                f"the server refused the TLS connection: check {SSL_CERT} and the key "
                f"(servers with ssl.clientAuth=need want a client certificate their trust "
                f"store accepts) and {SSL_CA}"
            )
        return (
            f"TLS connection to ZooKeeper {quorum} failed on every server: {hint} "
            f"(last error: {error})"
        )
    if watch.refused and len(watch.refused) >= watch.hosts:
        errors = "; ".join(f"{host}: {error}" for host, error in sorted(watch.refused.items()))
        return (
            f"cannot connect to ZooKeeper quorum {quorum}: every server refused the connection "
            f"({errors}); is ZooKeeper running there, and is spark.sparklock.zookeeper.quorum "
            f"right?"
        )
    detail = f" (last error: {watch.dropped})" if watch.dropped else ""
    hint = ""
    if not tls.enabled and watch.dropped and not watch.refused:
        # a plain connection the server closed: a TLS-only port does that
        hint = f"; if the servers accept only TLS, set {SSL_ENABLED}=true"
    return f"cannot connect to ZooKeeper quorum {quorum} within {timeout:g} s{detail}{hint}"


def credentials_refused(client: KazooClient) -> bool:
    """Whether ``client``'s connection ended because the servers refused its login."""
    watch = client.logger
    return isinstance(watch, ConnectionWatch) and watch.auth_failed


def refused_on_reconnect(quorum: str, security: ZooKeeperSecurity) -> str:
    return (
        f"ZooKeeper {quorum} refused the credentials of {AUTH}={security.auth.identity()} on "
        f"reconnecting (a changed password or an expired Kerberos ticket?); the next statement "
        f"connects anew"
    )


def access_denied(exc: BaseException, quorum: str, what: str, security: ZooKeeperSecurity) -> str:
    """The message of a request ZooKeeper refused for want of rights, naming the keys."""
    who = security.auth.identity()
    if isinstance(exc, AuthFailedError):
        return (
            f"ZooKeeper {quorum}: {what} failed: the server refused the credentials of "
            f"{AUTH}={who} (check the user and {AUTH_PASSWORD})"
        )
    if isinstance(exc, NoAuthError):
        return (
            f"ZooKeeper {quorum}: {what} failed: no permission (NoAuth) as {AUTH}={who}: a "
            f"node on the way was created by another identity with an ACL that does not let "
            f"this one create or delete below it (this side's {ACL_KEY}="
            f"{security.acl.describe()}; see docs/security.md)"
        )
    return (
        f"ZooKeeper {quorum}: {what} failed: the server refused the ACL of {ACL_KEY}="
        f"{security.acl.describe()} ({type(exc).__name__}; creator and auth: entries need an "
        f"identity the server accepted in {AUTH}={who})"
    )
