"""The ``spark.sparklock.*`` keys: name, default and meaning, in the order the docs list them.

Data only: ``config`` parses and checks the values; ``docs_pages`` renders this tuple as the
configuration reference (``docs/configuration.md``), so the page cannot drift from the code.
Meanings are Markdown: they are read on the docs site.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigKey:
    """One documented key: its default as a Spark conf value and what it means."""

    key: str
    default: str
    doc: str


KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "spark.sparklock.enabled",
        "true",
        (
            "Take locks at all (Hive's `hive.support.concurrency`). Can change at runtime; when "
            "`false` the lock statements still succeed (SHOW LOCKS empty, LOCK/UNLOCK no-ops)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.manager",
        "embedded",
        (
            "`embedded` (in-process; one Spark application) or `zookeeper` (shared with other "
            "drivers and with Hive)."
        ),
    ),
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
    ConfigKey(
        "spark.sparklock.lock.numRetries",
        "100",
        "Attempts per statement; `1` means one attempt, fail at once (Hive: 100).",
    ),
    ConfigKey(
        "spark.sparklock.lock.retryInterval",
        "1s",
        (
            "Sleep between attempts (Hive: 60s). Both policies wait at most `numRetries × "
            "retryInterval`."
        ),
    ),
    ConfigKey(
        "spark.sparklock.lock.waitPolicy",
        "queue",
        (
            "`queue`: fair, keeps its place in line and is woken by a ZooKeeper watch the moment "
            "the holder ahead releases (no writer starvation). `retry`: Hive's release-all, sleep, "
            "retry."
        ),
    ),
    ConfigKey(
        "spark.sparklock.unlock.numRetries",
        "10",
        "Attempts to release a lock that fails transiently before the failure is reported.",
    ),
    ConfigKey(
        "spark.sparklock.lock.escalation.partitions",
        "0",
        (
            "Lock escalation, off at `0`: a statement locking more than this many partitions of one"
            " table locks the table instead. Writes take EXCLUSIVE on the table (stronger, "
            "Hive-compatible: safe beside Hive). Reads escalate only with the next key. See [Lock "
            "escalation](concepts.md#lock-escalation)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.lock.escalation.reads",
        "false",
        (
            "Escalate reads too: SHARED on the table and on its writers facet "
            "`db@t@_sparklock_writers` instead of SHARED on every partition; every partition "
            "EXCLUSIVE lock then also takes EXCLUSIVE on the facet. Only when every writer of those"
            " tables is sparklock with this setting — Hive's partition writers do not take the "
            "facet."
        ),
    ),
    ConfigKey(
        "spark.sparklock.read.refreshListing",
        "true",
        (
            "Once a statement's locks are granted, list again the files of the file-based tables it"
            " reads that a writer may have changed since Spark listed them (while planning, or long"
            " before in the session's cached listing): without this a read queued behind a writer "
            "would read the listing from before the writer's commit and fail "
            "`FAILED_READ_FILE.FILE_NOT_EXIST` (or miss rows other drivers wrote). `true`: only "
            "what changed (see [What a read reads](reads.md)); `all`: every file index read, after "
            "every grant (the rule before write epochs); `false`: nothing, Spark's behaviour "
            "(`REFRESH TABLE` is then yours to run)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.explicit.onSessionClose",
        "keep",
        (
            "What a closed server session's `LOCK TABLE` locks do (Thrift/JDBC and Connect "
            "sessions, see [Servers](servers.md)): `keep` (Hive's behaviour: legacy scripts LOCK in"
            " one beeline call and UNLOCK in a later one) or `release`. Read from the session's "
            "conf when it locked (`SET` it in the session, or `--conf` for all)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.unlock.policy",
        "any",
        (
            "Who may `UNLOCK`: `any` (Hive's behaviour: every session removes any lock) or `owner` "
            "(only the user holding the locks on the object, or an admin). Application-wide: a "
            "session cannot `SET` it. See [Who may UNLOCK](security.md#who-may-unlock)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.admins",
        "",
        (
            "Comma-separated users who may `UNLOCK` any lock under `unlock.policy=owner` (e.g. "
            "`hive,etl_admin`). Application-wide."
        ),
    ),
    ConfigKey(
        "spark.sparklock.lock.queryString.maxLength",
        "10000",
        (
            "Characters of the statement text kept in each lock's data (Hive's "
            "`hive.lock.query.string.max.length`), at most 200000; `0` keeps none."
        ),
    ),
    ConfigKey(
        "spark.sparklock.lock.queryString.mode",
        "full",
        (
            "`full` (the statement's text) or `summary` (its kind and the objects it locks, no "
            "literals). See [Query text in lock data](security.md#query-text-in-lock-data)."
        ),
    ),
)
