"""The benchmarks' interval for a median ratio (``tests.benchmarks.common.median_ci``).

Targets such as "≤ 1.05" are judged on these intervals, so their ranks must be the binomial
interval of the median and must hold the median; pure Python, no Spark."""

from __future__ import annotations

import random

import pytest

from tests.benchmarks.common import fmt_ratio_ci, median_ci


def test_ranks_are_the_binomial_interval_of_the_median() -> None:
    values = list(range(100))
    random.Random(7).shuffle(values)  # order of arrival must not matter
    mid, lo, hi = median_ci(values)
    # n = 100: ranks 50 -+ 1.96 * 10 / 2 = 40.2 .. 59.8, widened to whole ranks 40 .. 60
    assert (mid, lo, hi) == (49.5, 40, 60)


@pytest.mark.parametrize("n", [1, 2, 5, 30, 301])
def test_interval_holds_the_median_and_stays_in_range(n: int) -> None:
    rng = random.Random(n)
    values = [rng.lognormvariate(0, 0.2) for _ in range(n)]
    mid, lo, hi = median_ci(values)
    assert min(values) <= lo <= mid <= hi <= max(values)


def test_interval_narrows_with_more_pairs() -> None:
    rng = random.Random(11)
    pairs = [rng.lognormvariate(0.05, 0.2) for _ in range(3000)]
    _, lo30, hi30 = median_ci(pairs[:30])
    _, lo3k, hi3k = median_ci(pairs)
    assert hi3k - lo3k < (hi30 - lo30) / 5  # ~sqrt(100) narrower
    assert lo3k < 1.05 < hi3k  # the true median is exp(0.05) = 1.051


def test_empty_and_format() -> None:
    assert all(x != x for x in median_ci([]))  # NaN, not an error: a mode that never ran
    assert fmt_ratio_ci(*median_ci([1.0, 1.1, 1.2])) == "1.100 (1.000-1.200)"
