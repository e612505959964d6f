"""Benchmarks: sparklock vs Hive's lock manager (``python3 -m tests.benchmarks.run``)."""
