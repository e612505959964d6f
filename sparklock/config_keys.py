"""The generic ``spark.sparklock.*`` keys: name, default and meaning, in the docs' order.

The generic keys, data only: ``config`` puts them around the backends' sections (each backend
documents its own keys in its folder, and ``spark.sparklock.manager``'s row names the registered
backends), parses and checks the values; ``docs_pages`` renders the whole as the configuration
reference (``docs/configuration.md``), so the page cannot drift from the code. Meanings are
Markdown: they are read on the docs site.
"""

from __future__ import annotations

from .values import ConfigKey

#: The keys before the backends' sections.
FIRST: tuple[ConfigKey, ...] = (
    ConfigKey(
        "spark.sparklock.enabled",
        "true",
        (
            "Take locks at all (Hive's `hive.support.concurrency`). Can change at runtime; when "
            "`false` the lock statements still succeed (SHOW LOCKS empty, LOCK/UNLOCK no-ops)."
        ),
    ),
)

#: The keys after the backends' sections.
REST: tuple[ConfigKey, ...] = (
    ConfigKey(
        "spark.sparklock.lock.numRetries",
        "100",
        (
            "With `retryInterval`, how long a statement waits for its locks. Under `queue` (the "
            "default policy) it keeps its place in line for up to `numRetries × retryInterval` "
            "(100 × 1s = 100 s) and is granted the moment the holders ahead release; under "
            "`retry` (Hive's) it tries `numRetries` times, `retryInterval` apart, so it gives up "
            "after `(numRetries − 1) × retryInterval` (`1`: one attempt, fail at once; Hive: 100)."
        ),
    ),
    ConfigKey(
        "spark.sparklock.lock.retryInterval",
        "1s",
        (
            "`retry`: the sleep between attempts (Hive: 60s); `queue`: the budget's unit, "
            "`numRetries × retryInterval` (see `numRetries`)."
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
        "spark.sparklock.explicit.onApplicationEnd",
        "keep",
        (
            "What a driver's `LOCK TABLE` locks do when its application ends normally (its Python "
            "process exits): `keep` (Hive's behaviour: they stay until `UNLOCK`; `python -m "
            "sparklock stale` finds them once their owner is gone) or `release`. A killed driver "
            "releases nothing: see [Owners alive or gone](operations.md#owners-alive-or-gone). "
            "Read from the session's conf when it locked."
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
        "spark.sparklock.unlock.scope",
        "all",
        (
            "Which locks `UNLOCK` removes: `all` (Hive's rule: every granted lock on the object; "
            "a running statement of this driver whose lock it removed is fenced, see "
            "[Fencing](fencing.md)) or `explicit` (only `LOCK TABLE`/`LOCK DATABASE` locks: "
            "running statements keep theirs, and an object held only by them is `NOT_LOCKED`)."
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
    ConfigKey(
        "spark.sparklock.lock.waitWarnInterval",
        "10s",
        (
            "A statement that has waited this long for its locks logs a WARN line on the driver "
            "(the server's log for Thrift and Connect sessions) naming whom it waits for, and "
            "again after each further such period while it waits; `0` turns it off. Shorter "
            "waits log at INFO only."
        ),
    ),
)
