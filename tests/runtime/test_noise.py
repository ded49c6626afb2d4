"""The harness's noise floor: measured around every point, pooled before and after."""

from __future__ import annotations

import pytest

from sim.config import parse_config
from sim.runtime.noise import measure_noise_floor, noise_floor_summary
from sim.runtime.point import run_point


def test_summary_pools_every_side() -> None:
    s = noise_floor_summary([1.0] * 50, [3.0] * 50)
    assert s["noise_floor_p50_ms"] == pytest.approx(2.0)
    assert s["noise_floor_p99_ms"] == pytest.approx(3.0)
    assert set(noise_floor_summary([], [])) == {"noise_floor_p50_ms", "noise_floor_p99_ms"}


@pytest.mark.realthreads
@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("ahead", [False, True])
def test_samples_are_the_latency_added_around_nothing(workers: int, ahead: bool) -> None:
    """Handed over at its time, or ahead (the load thread waking for it itself, as a
    point's requests are where the arrivals lead: sim.point.arrivals)."""
    lat = measure_noise_floor(samples=20, workers=workers, ahead=ahead)
    assert len(lat) == 20
    # latency minus the modelled timer: never negative, since the clock never
    # fires a timer early
    assert all(x >= 0.0 for x in lat)


@pytest.mark.realthreads
def test_every_point_reports_a_floor_well_below_a_request_that_works(write_config) -> None:
    path = write_config(
        {
            "workload": {"requests": 10, "arrival": {"kind": "closed", "clients": 1}},
            "connector": {"variant": "synthetic", "workers": 1, "options": {"hold_ms": 10.0}},
        }
    )
    _, (point,) = parse_config(path)
    s = run_point(point).summary
    assert 0.0 <= s["noise_floor_p50_ms"] <= s["noise_floor_p99_ms"]
    # the floor is the harness alone: a small part of a request holding 10 ms of GIL
    assert s["noise_floor_p50_ms"] < 0.2 * s["latency_p50_ms"]
