"""The ZooKeeper folder's middle tier: Hive's lock recipe as steps on the lock tree.

:mod:`.grants` (steps 1-3 for both wait policies), :mod:`.creation` (steps 1-2: which object
nodes exist, one multi creating the missing ones and every lock node), :mod:`.tree_hints` (what
step 1 knows without reading), :mod:`.cleanup` (step 4), :mod:`.wide_release` (step 4 beyond one
multi), :mod:`.queued` (the fair wait), :mod:`.waiters` (the ``retry`` policy's WAITING rows),
:mod:`.tree` (walks: SHOW LOCKS, UNLOCK, leftovers). Built on :mod:`..wire`; the manager tier
above puts the steps together.
"""
