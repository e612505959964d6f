"""When a lease renewal is worth a py4j call to the JVM (pure Python: the rule alone)."""

from __future__ import annotations

from sparklock.spark.lease_push import LAG_FRACTION, _due

S = 10**9  # ns


def test_a_new_epoch_is_pushed_at_once():
    assert _due(None, 5 * S, 0)


def test_a_small_advance_waits_for_a_later_push():
    """A busy driver's answers advance the deadline by milliseconds: not worth a call."""
    assert not _due(20 * S, 20 * S + 10**7, 0)


def test_an_advance_of_a_fraction_of_the_time_left_is_pushed():
    left = 20 * S
    step = left // LAG_FRACTION
    assert _due(left - step, left, 0)
    assert not _due(left - step + S, left, 0)


def test_the_jvm_keeps_most_of_the_lease():
    """Whatever is not pushed trails Python's deadline by less than the fraction of what is
    left: the JVM's lease never runs out while Python's has more than that left."""
    now, deadline = 3 * S, 30 * S
    for pushed in range(now, deadline, S // 10):
        if not _due(pushed, deadline, now):
            assert deadline - pushed < (deadline - now) / LAG_FRACTION


def test_nothing_new_is_never_pushed_again():
    assert not _due(7 * S, 7 * S, 8 * S)  # lapsed, and the JVM has it already
    assert _due(7 * S, 7 * S + 1, 8 * S)  # lapsed: any advance goes
