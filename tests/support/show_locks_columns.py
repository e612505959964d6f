"""The columns ``SHOW LOCKS`` and ``EXPLAIN LOCKS`` answer, as the tests expect them.

The SQL statements, the CLI listing and the cross-driver waiting test all check (or read rows
by) the same columns; one list here means a column added is expected once, everywhere.
"""

from __future__ import annotations

#: SHOW LOCKS [...] (without EXTENDED)
BASIC = ["name", "mode", "state"]
#: SHOW LOCKS [...] EXTENDED, and the CLI's ``locks`` listing
EXTENDED = [
    "name",
    "mode",
    "query_id",
    "lock_time",
    "lock_type",
    "query_string",
    "client",
    "user",
    "state",
    "blocked_by",
    "acquired_at",
    "wait_since",
    "agent",
    "alive",
]
#: EXPLAIN LOCKS <statement>
EXPLAIN = ["name", "mode"]
