"""Arrival processes: seeded gaps with the right shape, and a run that follows them."""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
import pytest

from sim.config import parse_config
from sim.config.workload import ConstantArrival, OnOffArrival, PoissonArrival
from sim.point.arrivals import HAND_OVER_LEAD_S
from sim.runtime.env import HybridEnvironment
from sim.runtime.point import _drive, run_point
from sim.workload.arrivals import gaps_from_times, onoff_times, open_loop_gaps, open_loop_times
from sim.workload.plan import PlannedRequest, Workload


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
    res = run_point(points[0])
    recs = res.records
    # The schedule is the plan, exactly, however late the loop got round to each request.
    assert [r.arrival_s for r in recs] == [i / 50.0 for i in range(8)]
    for r in recs:
        # injected at its planned time (handed over ahead, kept by its load thread) or late
        assert r.injected_s >= r.arrival_s - 1e-9
        assert r.start_s >= r.arrival_s  # never started early
        assert r.inject_lag_ms == pytest.approx((r.injected_s - r.arrival_s) * 1e3, abs=1e-3)
        # Latency and queue time count from the plan: they include the lag.
        assert r.latency_ms == pytest.approx((r.done_s - r.arrival_s) * 1e3, abs=1e-3)
        assert r.queue_ms >= r.inject_lag_ms - 1e-6
    assert res.summary["offered_rps"] == pytest.approx(50.0)
    assert res.summary["achieved_rps"] > 0
    assert res.summary["inject_lag_p99_ms"] >= res.summary["inject_lag_p50_ms"] >= 0
    # GIL time is the part of the simulation thread's CPU spent outside its waits.
    assert 0 < res.summary["harness_us_per_request"] <= res.summary["harness_cpu_us_per_request"]


@pytest.mark.realthreads
def test_closed_loop_clients_send_at_completion_plus_think_time(write_config) -> None:
    path = write_config(
        {"workload": {"requests": 6, "arrival": {"kind": "closed", "clients": 1, "think_ms": 3}}}
    )
    _, points = parse_config(path)
    recs = run_point(points[0]).records
    assert recs[0].arrival_s == 0.0
    for prev, nxt in itertools.pairwise(recs):
        assert nxt.arrival_s == pytest.approx(prev.done_s + 0.003, abs=1e-6)
        assert nxt.injected_s >= nxt.arrival_s - 1e-9


class _SlowFirst:
    """A pipeline whose first request blocks the simulation thread: the loop falls behind."""

    def __init__(self, env: HybridEnvironment, stall_s: float) -> None:
        self.env, self.stall_s = env, stall_s
        self.seen: list[tuple[float, float]] = []  # (planned run time, run time handed over)

    def inject(self, req, at_s, then=None):
        self.seen.append((at_s, self.env.to_run_time(time.perf_counter_ns())))
        if req.request_id == 0:
            time.sleep(self.stall_s)


def _stalled_run(n: int, rate: float, stall: float, lead_s: float) -> tuple[Any, Any]:
    """``n`` constant arrivals at ``rate`` driven through a pipeline whose first request
    stalls the loop ``stall`` seconds, handed over up to ``lead_s`` ahead."""
    env = HybridEnvironment(stall_timeout_s=5)
    times = open_loop_times(ConstantArrival(rate_rps=rate), np.random.default_rng(0), n)
    reqs = tuple(PlannedRequest(i, 16, t, 0, 0.0) for i, t in enumerate(times))
    pipe = _SlowFirst(env, stall)
    _drive(env, pipe, Workload(reqs, None, 0.0), lead_s)  # type: ignore[arg-type]
    env.run()
    return pipe, env


def test_a_late_loop_never_shifts_later_arrivals() -> None:
    n, rate, stall = 40, 1000.0, 0.05
    pipe, _env = _stalled_run(n, rate, stall, 0.0)
    assert [at for at, _ in pipe.seen] == [i / rate for i in range(n)]
    # Requests planned during the stall are handed over after it, all at once...
    assert all(handed >= stall for at, handed in pipe.seen[1:] if at < stall)
    # ...and none is ever handed over before its planned time.
    assert all(handed >= at - 1e-9 for at, handed in pipe.seen)


def test_a_pipeline_that_keeps_requests_gets_them_ahead_in_batches() -> None:
    n, rate, stall = 120, 1000.0, 0.05
    pipe, env = _stalled_run(n, rate, stall, HAND_OVER_LEAD_S)
    assert [at for at, _ in pipe.seen] == [i / rate for i in range(n)]
    lead = HAND_OVER_LEAD_S
    # Never more than a lead ahead (the clock's calls run at their time or later)...
    assert all(handed >= at - lead - 1e-9 for at, handed in pipe.seen)
    # ...those planned during the stall after it, and past it ahead, most of them by more
    # than half a lead (a batch every half lead: the wake-ups the harness saves)
    after = [at - handed for at, handed in pipe.seen if at > stall + lead]
    assert after and all(ahead > 0 for ahead in after[1:])
    assert sum(ahead >= lead / 2 - 1e-3 for ahead in after) >= len(after) // 2
    assert env.waits < n / 4


def test_a_curve_follows_its_rate_step_by_step_and_repeats() -> None:
    from sim.config.workload import CurveArrival
    from sim.workload.arrivals import open_loop_block, open_loop_times

    arr = CurveArrival(rate_rps=(10.0, 100.0), step_s=10.0)
    times = np.asarray(open_loop_times(arr, np.random.default_rng(0), 11_000))
    # 1,100 arrivals a 20 s cycle: 10 cycles, 1:10 between the steps
    assert times[-1] == pytest.approx(200.0, rel=0.05)
    low = np.count_nonzero(times % 20 < 10)
    assert low / len(times) == pytest.approx(1 / 11, rel=0.1)
    # drawn in blocks, continuing the clock: the same process
    rng, clock, parts = np.random.default_rng(0), 0.0, []
    for first in range(0, 11_000, 4096):
        part, clock = open_loop_block(arr, rng, first, min(4096, 11_000 - first), clock)
        parts.append(part)
    assert np.allclose(np.concatenate(parts), times, rtol=1e-9)
