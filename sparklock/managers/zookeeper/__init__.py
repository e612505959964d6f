"""The ZooKeeper lock manager: Hive's ZooKeeperHiveLockManager layout at a constant round-trip cost.

Layout (identical to Hive 2.3.10, so Hive and Spark see and respect each other's locks)::

    /<namespace>/<db>[/<table>[/k1=v1[/k2=v2...]]]/LOCK-SHARED-0000000007

Object nodes are persistent and empty; a lock is a sequential child ``LOCK-SHARED-<seq10>`` or
``LOCK-EXCLUSIVE-<seq10>`` whose data is ``queryId:lockTime:IMPLICIT|EXPLICIT:queryStr:clientIp``.
Statement (implicit) locks are EPHEMERAL_SEQUENTIAL, ``LOCK TABLE`` (explicit) ones
PERSISTENT_SEQUENTIAL. A lock is granted when no lower-sequence sibling conflicts with it
(:func:`sparklock.locks.model.decide`, Hive's rule, made owner-aware).

Where Hive spends three sequential requests per object each way, a lock set costs a constant
number of round trips here whatever its size:

1. one batched read of the "container" nodes' children: which object nodes exist;
2. one ``multi`` creating the missing object nodes (parents first) and every lock node;
3. one batched ``getChildren`` of the object nodes that existed before (sent right behind the
   multi, without waiting for its answer: ZooKeeper runs a session's requests in order), then
   ``decide()`` for the locks whose sequence number is above 0;
4. release: one ``multi`` deleting the lock nodes and the object nodes left empty, deepest first
   (a set too big for one multi: a few, see :mod:`.wide_release`).

Every thread of the process shares one connection; what threads ask meanwhile leaves as one
request (:mod:`.coalescing`), so 32 threads cost the connection about what one does.

The ``retry`` policy is Hive's (on conflict drop everything, sleep, retry); the ``queue`` policy is
fair (:mod:`.queued`).

Modules, one job each: :mod:`.manager` (the recipe), :mod:`.grants` (steps 1-3 for both
policies), :mod:`.creation` (steps 1-2),
:mod:`.tree_hints` (what step 1 knows without reading), :mod:`.cleanup`
(step 4), :mod:`.wide_release` (step 4 beyond one multi), :mod:`.queued` (the fair wait),
:mod:`.tree` (walks), :mod:`.layout` (znode names), :mod:`.transport` (requests, retries,
errors), :mod:`.coalescing` (many threads' requests as one), :mod:`.wire` (multiRead/multi on
the wire), :mod:`.session` (the process's one kazoo client), :mod:`.polling` (its cheaper
``select``), :mod:`.owners` (which nodes are ours), :mod:`.clock` (the foreign-write clock).
What the rest of sparklock sees: :mod:`.backend` (the registry's entry), :mod:`.settings` (its
``spark.sparklock.zookeeper.*`` keys), :mod:`.security` (TLS, credentials, ACLs),
:mod:`.local_server` and :mod:`.local_server_cli` (a development server from pyspark's jars).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .layout import object_from_components, parse_lock_name

if TYPE_CHECKING:
    from .manager import ZooKeeperLockManager


def __getattr__(name: str):
    """``ZooKeeperLockManager`` on first use: the registry imports this package for its
    settings, which must not import kazoo."""
    if name == "ZooKeeperLockManager":
        from .manager import ZooKeeperLockManager

        return ZooKeeperLockManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ZooKeeperLockManager", "object_from_components", "parse_lock_name"]
