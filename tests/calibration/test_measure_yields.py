"""A waiting thread's takes in mid-hold (sim.calibration.measure_yields): counted where the
call lets the GIL go undeclared, not in a pure-Python hold nor in a declared section."""

from __future__ import annotations

import sys
import time

import pytest

from connectors.base import gil_free
from sim.calibration.measure_yields import Waiter, _count, timed


def _busy(s: float) -> None:
    end = time.perf_counter() + s
    while time.perf_counter() < end:
        pass


def _releases(s: float) -> None:
    """Holds, lets the GIL go for ``s`` undeclared (as a large ufunc does), holds again."""
    _busy(0.001)
    time.sleep(s)
    _busy(0.001)


def _declared(s: float) -> None:
    _busy(0.001)
    with gil_free():
        time.sleep(s)
    _busy(0.001)


def _measure(fn, reps: int = 8) -> dict:
    with Waiter() as waiter:
        spans = []
        for _ in range(reps):
            time.sleep(0.002)
            spans.append(timed(fn, 0.003)[0])
    return waiter.summary(spans)


def test_an_undeclared_release_lets_the_waiter_in_mid_hold() -> None:
    got = _measure(_releases)
    assert got["per_request"] >= 1.0
    lo, hi = got["span"]
    assert 0.0 < lo <= hi < 1.0


def test_a_pure_python_hold_lets_nobody_in() -> None:
    assert _measure(_busy)["per_request"] == 0.0


def test_a_declared_section_is_not_counted() -> None:
    assert _measure(_declared)["per_request"] == 0.0


def test_the_switch_interval_is_put_back() -> None:
    before = sys.getswitchinterval()
    with Waiter():
        assert sys.getswitchinterval() == 1.0
    assert sys.getswitchinterval() == before


def test_count_skips_declared_sections_and_places_takes_in_held_time() -> None:
    # one call 0..100 with a declared section 40..60: held time 80
    spans = [(0, 100, [(40, 60)])]
    counts, positions = _count(spans, [10, 50, 70, 120])
    assert counts == [2]  # 50 is in the section, 120 after the call
    assert positions == pytest.approx([10 / 80, 50 / 80])


def test_the_engine_build_s_own_releases_are_measured_per_index_variant() -> None:
    pytest.importorskip("torch", reason="the engine's index variants need torch")
    from sim.calibration.measure_engine import measure_engine

    got = measure_engine(reps=3, batch_sizes=(8,))
    assert got
    for entry in got.values():
        assert entry["yields"]["per_request"] >= 0
        lo, hi = entry["yields"]["span"]
        assert 0.0 <= lo <= hi <= 1.0


def test_the_span_stays_inside_the_hold_with_few_takes() -> None:
    waiter = Waiter()  # not started: its takes set by hand
    waiter.takes[:] = [5, 95]
    got = waiter.summary([(0, 100, [])])
    assert got["per_request"] == 2
    # the 10th and 90th percentiles between the two, never beyond them (a small sample's
    # "exclusive" percentiles reach past its ends: 1.16 read for a build)
    assert got["span"] == pytest.approx([0.14, 0.86])


def test_with_the_gil_off_nothing_is_counted(monkeypatch) -> None:
    import sim.calibration.measure_yields as measure_yields

    monkeypatch.setattr(measure_yields, "gil_enabled", lambda: False)
    waiter = Waiter()
    waiter.takes[:] = [5, 95]
    assert waiter.summary([(0, 100, [])]) == {"per_request": 0.0, "span": [0.0, 0.0]}
