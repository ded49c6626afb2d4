"""The prediction level's verdict (sim.validation.verdict): pure functions, fast."""

from __future__ import annotations

import math

from sim.analysis.bootstrap import Interval
from sim.validation.paired import ValidationRow
from sim.validation.verdict import (
    CANNOT_JUDGE,
    MARGIN,
    NOT_REPEATED,
    NOT_WITHIN,
    OUTSIDE,
    REPEAT,
    TARGET,
    WITHIN,
    judge,
    rule,
    verdict,
    verdicts_by_value,
)

nan = math.nan


def _row(variant: str, p50: float, p99: float, real: float = 100.0) -> ValidationRow:
    """A pair at one point whose real latency p50 and p99 are ``real`` and whose other side
    reads ``p50`` and ``p99``."""
    return ValidationRow(
        {"variant": variant, "workers": "1"},
        {"latency_p50_ms": Interval(real, nan, nan), "latency_p99_ms": Interval(real, nan, nan)},
        {"latency_p50_ms": p50, "latency_p99_ms": p99},
    )


def test_a_point_passes_by_the_target_first_then_by_the_real_sides_own_error() -> None:
    assert rule("latency_p50_ms", 0.09, nan) == TARGET
    assert rule("latency_p50_ms", -0.10, 0.30) == TARGET
    # outside ±10 %, but no larger than the real side's own 12 % plus the margin
    assert rule("latency_p50_ms", 0.15, -0.12) == REPEAT
    assert rule("latency_p50_ms", 0.12 + MARGIN + 0.001, 0.12) == OUTSIDE
    # p99 has its own target (±15 %)
    assert rule("latency_p99_ms", 0.14, nan) == TARGET
    assert rule("latency_p99_ms", 0.16, nan) == OUTSIDE  # no second real run: target only
    assert rule("latency_p50_ms", nan, 0.1) == "–"


def test_judge_pairs_each_model_point_with_its_second_real_run() -> None:
    model = [_row("numpy", 115.0, 100.0), _row("scalar", 124.0, 100.0)]
    again = [_row("scalar", 80.0, 100.0), _row("numpy", 101.0, 100.0)]  # another order
    got = judge(model, again)
    assert [p.key["variant"] for p in got] == ["numpy", "scalar"]
    numpy, scalar = got
    assert numpy.rules["latency_p50_ms"] == OUTSIDE  # +15 % where the real side repeats to 1 %
    assert math.isclose(numpy.again["latency_p50_ms"], 0.01)
    assert numpy.repeats is True
    assert scalar.rules["latency_p50_ms"] == REPEAT  # +24 % beside the real side's −20 % + 5
    assert scalar.repeats is False
    assert scalar.passed("latency_p99_ms") is True


def test_a_grid_whose_real_side_repeats_at_fewer_than_half_its_points_is_not_judged() -> None:
    # the model exact everywhere, the real side repeating at 2 of 5 points
    model = [_row(f"v{i}", 100.0, 100.0) for i in range(5)]
    again = [_row(f"v{i}", 100.0 if i < 2 else 130.0, 100.0) for i in range(5)]
    v = verdict(judge(model, again))
    assert v.word == CANNOT_JUDGE
    assert v.repeat_points == 2
    assert "cannot judge" in v.text() and "2/5 points" in v.text()
    # at 3 of 5 it is judged
    again[2] = _row("v2", 100.0, 100.0)
    assert verdict(judge(model, again)).word == WITHIN


def test_the_verdict_needs_five_of_six_points_on_each_latency_metric() -> None:
    again = [_row(f"v{i}", 100.0, 100.0) for i in range(6)]
    five = [_row(f"v{i}", 100.0, 100.0 if i else 150.0) for i in range(6)]
    assert verdict(judge(five, again)).word == WITHIN
    four = [_row(f"v{i}", 100.0, 100.0 if i > 1 else 150.0) for i in range(6)]
    got = verdict(judge(four, again))
    assert got.word == NOT_WITHIN
    assert got.counts("latency_p99_ms") == "4/6 (4 by the target, 0 by repeatability)"


def test_the_verdict_says_which_rule_each_point_passed_by() -> None:
    model = [_row("a", 100.0, 100.0), _row("b", 116.0, 100.0), _row("c", 100.0, 100.0)]
    again = [_row("a", 100.0, 100.0), _row("b", 88.0, 100.0), _row("c", 100.0, 100.0)]
    v = verdict(judge(model, again))
    assert v.passed["latency_p50_ms"] == {TARGET: 2, REPEAT: 1}
    assert "latency p50 3/3 (2 by the target, 1 by repeatability)" in v.text()


def test_without_a_second_real_run_only_the_target_counts_and_the_verdict_says_so() -> None:
    model = [_row("a", 100.0, 100.0), _row("b", 100.0, 100.0)]
    v = verdict(judge(model))
    assert v.word == WITHIN and v.repeat_points is None
    assert NOT_REPEATED in v.text()
    assert verdict(judge([_row("a", 130.0, 100.0)])).word == NOT_WITHIN


def test_each_swept_value_gets_its_own_verdict() -> None:
    model = [_row("numpy", 100.0, 100.0), _row("scalar", 140.0, 100.0)]
    by = dict(verdicts_by_value(judge(model)))
    assert list(by) == ["variant"]  # workers has one value: no line
    words = {value: v.word for value, v in by["variant"]}
    assert words == {"numpy": WITHIN, "scalar": NOT_WITHIN}


def test_the_mechanism_level_needs_each_target_at_nine_of_ten_points() -> None:
    from sim.validation.verdict import mechanism_verdict

    metrics = ["latency_p50_ms", "gil_wait_mean_ms"]
    nine = [{"latency_p50_ms": i > 0, "gil_wait_mean_ms": True} for i in range(10)]
    assert mechanism_verdict(nine, metrics) == WITHIN
    eight = [{"latency_p50_ms": i > 1, "gil_wait_mean_ms": True} for i in range(10)]
    assert mechanism_verdict(eight, metrics) == NOT_WITHIN
    assert mechanism_verdict([{"latency_p50_ms": True}], metrics) == NOT_WITHIN  # a metric absent
