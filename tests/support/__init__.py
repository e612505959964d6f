"""Test support: real servers started from the pyspark jars (no mocks)."""
