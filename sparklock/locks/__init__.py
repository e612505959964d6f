"""The lock vocabulary: lock objects (database, table, partition), modes, requests, lock data,
Hive's grant rule, and the states SHOW LOCKS reports. No I/O, no Spark, no backend."""
