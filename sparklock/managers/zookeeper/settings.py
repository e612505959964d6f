"""The ZooKeeper backend's settings: its ``spark.sparklock.zookeeper.*`` keys, their defaults,
validation and documentation rows (security: :mod:`.security`).

Parsed for every conf (so a bad value fails when Spark starts, whichever manager is chosen) into
one frozen, hashable :class:`ZooKeeperSettings`: part of the key that picks the process's manager,
so two quorums, namespaces or credentials never share a client.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ...errors import ConfigError
from ...values import DURATION_ACCEPTS, ConfigKey, parse_bool, parse_duration
from .wire.security import ZooKeeperSecurity, parse_security

QUORUM = "spark.sparklock.zookeeper.quorum"
NAMESPACE = "spark.sparklock.zookeeper.namespace"
LEASE_MARGIN = "spark.sparklock.zookeeper.lease.margin"
#: the smallest margin, as a fraction of the session timeout: a margin of 0 leaves no time for
#: the JVM's watchdog to fence, nor for a commit that passed its check (docs/fencing.md)
MARGIN_FLOOR = 0.1

#: The documented keys, in the docs' order.
KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "spark.sparklock.zookeeper.quorum",
        "127.0.0.1:2181",
        "ZooKeeper connection string `host:port[,host:port...]`, optional `/chroot` suffix.",
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.namespace",
        "hive_zookeeper_namespace",
        "Root znode of all locks (Hive's `hive.zookeeper.namespace`).",
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.sessionTimeout",
        "30s",
        (
            "ZooKeeper session timeout: how long a dead driver's implicit locks outlive it (Hive: "
            "120s)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.lease.margin",
        "",
        (
            "How long before the session could expire the driver's JVM stops trusting its locks "
            "(empty: a third of `sessionTimeout`). The lease runs until the send time of the last "
            "request ZooKeeper answered plus `sessionTimeout` minus this margin; when it passes "
            "without a renewal (Python stalled, ZooKeeper unreachable) the JVM fences the "
            "statements holding ZooKeeper locks. At least a tenth of `sessionTimeout` (what the "
            "JVM's reaction and a commit past its check must fit in), below two thirds of it "
            "(kazoo pings every third). See [Fencing](fencing.md)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.connectionTimeout",
        "15s",
        "How long to wait for the first ZooKeeper connection before statements fail.",
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.ssl.enabled",
        "false",
        (
            "Connect to ZooKeeper over TLS (the servers' `secureClientPort`). See "
            "[Security](security.md)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.ssl.ca",
        "",
        (
            "PEM file of the CA certificates that sign the servers' certificates (empty: the "
            "system's CAs). Certificates are always verified."
        ),
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.ssl.certFile",
        "",
        (
            "PEM client certificate, for servers that require one (ZooKeeper's "
            "`ssl.clientAuth=need`, its default); set with `ssl.keyFile`."
        ),
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.ssl.keyFile",
        "",
        "PEM private key of `ssl.certFile`.",
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.ssl.keyPassword",
        "",
        (
            "Password of an encrypted `ssl.keyFile`. A secret: never shown (Spark's UI redacts keys"
            " with `password` in the name)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.ssl.hostnameVerification",
        "true",
        "Check that a server's certificate names the host (or IP) its quorum entry uses.",
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.auth",
        "none",
        (
            "Who sparklock is to ZooKeeper: `none`, `digest:<user>`, `sasl:DIGEST-MD5:<user>`, "
            "`sasl:GSSAPI` or `sasl:GSSAPI:<principal>` (Kerberos)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.auth.password",
        "",
        "Password of a `digest` or `DIGEST-MD5` identity. A secret: never shown.",
    ),
    ConfigKey(
        "spark.sparklock.zookeeper.acl",
        "open",
        (
            "ACL of every znode sparklock creates: `open` (`world:anyone`, Hive's), `creator` (all "
            "rights to the identity that created it, read to everyone) or a list "
            "`scheme:id:perms,...`."
        ),
    ),
)


@dataclass(frozen=True)
class ZooKeeperSettings:
    """Where the locks live and how to reach them."""

    quorum: str = "127.0.0.1:2181"
    namespace: str = "hive_zookeeper_namespace"
    session_timeout: float = 30.0
    connection_timeout: float = 15.0
    #: the lease's margin in seconds; None: a third of the session timeout
    lease_margin: float | None = None
    #: TLS, credentials and ACLs (secrets inside never print)
    security: ZooKeeperSecurity = ZooKeeperSecurity()

    @property
    def namespace_root(self) -> str:
        return "/" + self.namespace


def parse(v: Mapping[str, str]) -> ZooKeeperSettings:
    """The section of a conf with every default filled in (``v``: key -> value)."""
    namespace = str(v[NAMESPACE]).strip().strip("/")
    if not namespace or any(p in ("", ".", "..") for p in namespace.split("/")):
        raise ConfigError(NAMESPACE, v[NAMESPACE], "a znode name such as hive_zookeeper_namespace")
    quorum = str(v[QUORUM]).strip()
    if not re.match(r"^[^,\s/]+(,[^,\s/]+)*(/\S*)?$", quorum):
        raise ConfigError(QUORUM, quorum, "host:port[,host:port...][/chroot]")
    timeouts = {}
    for key in ("sessionTimeout", "connectionTimeout"):
        full = f"spark.sparklock.zookeeper.{key}"
        seconds = parse_duration(full, v[full])
        if seconds <= 0:
            raise ConfigError(full, v[full], DURATION_ACCEPTS + ", greater than 0")
        timeouts[key] = seconds
    margin = None
    if str(v[LEASE_MARGIN]).strip():
        margin = parse_duration(LEASE_MARGIN, str(v[LEASE_MARGIN]).strip())
        timeout = timeouts["sessionTimeout"]
        if not timeout * MARGIN_FLOOR <= margin < timeout * 2 / 3:
            raise ConfigError(
                LEASE_MARGIN,
                v[LEASE_MARGIN],
                DURATION_ACCEPTS
                + f", from {timeout * MARGIN_FLOOR:g}s (a tenth of sessionTimeout) to below "
                f"{timeout * 2 / 3:g}s (two thirds of it), or empty",
            )
    return ZooKeeperSettings(
        quorum=quorum,
        namespace=namespace,
        session_timeout=timeouts["sessionTimeout"],
        connection_timeout=timeouts["connectionTimeout"],
        lease_margin=margin,
        security=parse_security(v, parse_bool),
    )
