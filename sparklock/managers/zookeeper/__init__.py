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

Three tiers, each importing only the ones below it (``tests/test_structure.py`` checks):

* :mod:`.wire`: the connection and its requests (session, security, transport, coalescing,
  the multi requests, which nodes are ours, the foreign-write clock);
* :mod:`.recipe`: the lock recipe's steps (grants, creation, cleanup, wide release, the fair
  wait, WAITING rows, tree walks);
* this folder: :mod:`.manager` (the recipe put together, the port's methods), :mod:`.backend`
  (the registry's entry), :mod:`.settings` (its ``spark.sparklock.zookeeper.*`` keys),
  :mod:`.local_server` and :mod:`.local_server_cli` (a development server from pyspark's jars);
  :mod:`.layout` (znode names) is what every tier spells paths with.
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
