"""What a statement's locks are shaped by: lock escalation and the query text in lock data.

Value types of the lock vocabulary, parsed from their ``spark.sparklock.lock.*`` keys here so that
the rules that read them need nothing above ``locks`` (``config`` builds the whole configuration
from these and re-exports them). Each default is the one its key documents in ``config_keys``
(a test compares them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ConfigError
from ..values import parse_bool, parse_choice, parse_int

ESCALATION_PARTITIONS = "spark.sparklock.lock.escalation.partitions"
ESCALATION_READS = "spark.sparklock.lock.escalation.reads"
QUERY_STRING_MAX_LENGTH = "spark.sparklock.lock.queryString.maxLength"
QUERY_STRING_MODE = "spark.sparklock.lock.queryString.mode"

#: Query text kept in lock data at most (characters): four UTF-8 bytes each stay well below
#: ZooKeeper's 1 MB node limit (jute.maxbuffer).
QUERY_STRING_MAX_LENGTH_LIMIT = 200_000


@dataclass(frozen=True)
class Escalation:
    """Lock escalation (opt-in): fewer, coarser locks for statements touching many partitions.

    ``partitions`` is the threshold (0 = off): beyond it, a table's partition locks of one
    statement become one table lock. Writes escalate to EXCLUSIVE on the table, which is stronger
    and Hive-compatible. Reads escalate (``reads``) to SHARED on the table plus SHARED on its
    writers facet, which is correct only if every partition writer also takes EXCLUSIVE on that
    facet: with ``reads`` on, every partition EXCLUSIVE lock of a statement does (Hive's writers
    do not, hence no Hive peer may write those tables).
    """

    partitions: int = 0
    reads: bool = False

    @property
    def enabled(self) -> bool:
        return self.partitions > 0

    @classmethod
    def from_conf(cls, conf: Mapping[str, str] | None) -> Escalation:
        """Only the escalation keys of a conf (the rest is validated by SparkLockConfig)."""
        conf = conf or {}
        return cls(
            partitions=parse_int(
                ESCALATION_PARTITIONS, conf.get(ESCALATION_PARTITIONS, cls.partitions), 0
            ),
            reads=parse_bool(ESCALATION_READS, conf.get(ESCALATION_READS, cls.reads)),
        )


@dataclass(frozen=True)
class QueryText:
    """What lock data says about the statement: ``full`` text or a ``summary`` (its
    kind and objects, no literals), at most ``max_length`` characters (0: none)."""

    mode: str = "full"
    max_length: int = 10_000

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> QueryText:
        lkey, mkey = QUERY_STRING_MAX_LENGTH, QUERY_STRING_MODE
        length = parse_int(lkey, conf.get(lkey, cls.max_length), 0)
        if length > QUERY_STRING_MAX_LENGTH_LIMIT:
            raise ConfigError(
                lkey, conf.get(lkey), f"an integer from 0 to {QUERY_STRING_MAX_LENGTH_LIMIT}"
            )
        return cls(
            mode=parse_choice(mkey, conf.get(mkey, cls.mode), ("full", "summary")),
            max_length=length,
        )
