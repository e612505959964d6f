"""Which partitions a write's rows are pinned to: the leading partition columns fixed to constants.

The JVM reports equality constraints on a write's target columns (column → the values every row
it writes may take there); this module decides what they mean for a partitioned table: the
partitions (or prefixes) they pin, one per combination of values, in the table's column order.
A prefix is what Hive locks for a partial spec; no constraint on the first partition column pins
nothing, and the write keeps its table lock (never fewer locks than the rows it may write).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from .facts import Spec

#: More partitions than this from one statement: lock the table instead (a long IN list would
#: otherwise make thousands of lock objects for one statement).
MAX_PINNED = 1000


def pinned_specs(columns: Sequence[str], constraints: Mapping[str, Iterable[str]]) -> list[Spec]:
    """The partition specs (or prefixes) ``constraints`` pin among ``columns``; [] if none."""
    lowered = {k.lower(): tuple(v) for k, v in constraints.items()}
    prefix: list[tuple[str, tuple[str, ...]]] = []
    for col in columns:
        values = lowered.get(col.lower())
        if not values:
            break
        prefix.append((col, values))
    if not prefix:
        return []
    count = 1
    for _, values in prefix:
        count *= len(values)
    if count > MAX_PINNED:
        return []
    names = [c for c, _ in prefix]
    return [
        dict(zip(names, combo, strict=True)) for combo in itertools.product(*(v for _, v in prefix))
    ]
