"""Arrival processes: seeded gaps with the right shape, and a run that follows them."""

from __future__ import annotations

import numpy as np
import pytest

from sim.config import parse_config
from sim.config.workload import ConstantArrival, OnOffArrival, PoissonArrival
from sim.runtime.point import run_point
from sim.workload.arrivals import gaps_from_times, onoff_times, open_loop_gaps


def _times(gaps: list[float]) -> np.ndarray:
    return np.cumsum(gaps)


def test_poisson_mean_gap_and_spread() -> None:
    gaps = np.asarray(
        open_loop_gaps(PoissonArrival(rate_rps=50.0), np.random.default_rng(1), 20000)
    )
    assert gaps.mean() == pytest.approx(1 / 50, rel=0.05)
    assert gaps.std() == pytest.approx(1 / 50, rel=0.05)  # exponential: std == mean


def test_constant_rate_is_exact_and_starts_at_zero() -> None:
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    gaps = open_loop_gaps(ConstantArrival(rate_rps=4.0), rng, 5)
    assert gaps == [0.0, 0.25, 0.25, 0.25, 0.25]
    assert rng.bit_generator.state == before  # draws nothing
    assert open_loop_gaps(ConstantArrival(), rng, 0) == []


def test_onoff_arrives_only_in_bursts_at_the_right_rate() -> None:
    arr = OnOffArrival(rate_rps=200.0, on_ms=100.0, off_ms=300.0)
    t = _times(open_loop_gaps(arr, np.random.default_rng(2), 20000))
    phase = np.mod(t, 0.4)
    assert np.all(phase < 0.1 + 1e-9)
    mean_rate = len(t) / t[-1]
    assert mean_rate == pytest.approx(200.0 * 0.1 / 0.4, rel=0.05)


def test_onoff_time_mapping() -> None:
    on = np.array([0.05, 0.1, 0.25])
    assert onoff_times(on, 0.1, 1.0).tolist() == pytest.approx([0.05, 1.1, 2.25])
    assert gaps_from_times(np.array([1.0, 1.5, 3.0])) == [1.0, 0.5, 1.5]


@pytest.mark.parametrize(
    "arrival", [PoissonArrival(rate_rps=7.0), OnOffArrival(), ConstantArrival(rate_rps=3.0)]
)
def test_same_seed_same_gaps(arrival) -> None:
    a = open_loop_gaps(arrival, np.random.default_rng([5, 0]), 100)
    b = open_loop_gaps(arrival, np.random.default_rng([5, 0]), 100)
    assert a == b
    if not isinstance(arrival, ConstantArrival):
        assert a != open_loop_gaps(arrival, np.random.default_rng([6, 0]), 100)


def test_closed_loop_is_not_an_open_loop_process() -> None:
    from sim.config.workload import ClosedLoopArrival

    with pytest.raises(TypeError):
        open_loop_gaps(ClosedLoopArrival(), np.random.default_rng(0), 3)  # type: ignore[arg-type]


@pytest.mark.realthreads
def test_a_run_follows_constant_arrivals(write_config) -> None:
    path = write_config(
        {"workload": {"requests": 8, "arrival": {"kind": "constant", "rate_rps": 50.0}}}
    )
    _, points = parse_config(path)
    recs = run_point(points[0]).records
    arrivals = np.array([r.arrival_s for r in recs])
    assert np.all(np.diff(arrivals) > 0)
    # 7 gaps of 20 ms: the run's clock follows the wall clock, so never early and not
    # far late even on a busy machine.
    span = arrivals[-1] - arrivals[0]
    assert 0.14 * 0.95 <= span <= 0.14 * 3
