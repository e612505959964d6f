"""Test support: real servers started from the pyspark jars (no mocks), and the shared harness.

* ``spark`` -- ``SparkSpec`` / ``build_session``: the one way a test module (through the
  ``spark`` fixture of ``conftest.py``), the Spark benchmark and a driver process build a session.
* ``locks`` -- what tests look at: locks held, SHOW/EXPLAIN LOCKS, the lock set a statement
  requested, ``wait_for``, ``take`` (one lock straight from a manager).
* ``zk_tree`` -- a ZooKeeper client of its own (``inspecting``) and the tree below a root.
* ``zookeeper`` -- ZooKeeper servers and ensembles; ``driver`` -- a separate Spark driver
  process; ``hive_harness`` -- Hive's real lock manager in a JVM of its own.
"""
