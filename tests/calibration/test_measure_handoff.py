"""calibrate times the GIL's own hand-offs (sim.calibration.measure_handoff): each visit
gives one forced hand-off and, found in the spinner's gaps, its return; every sample is a
positive stretch without the GIL, never a time asserted."""

from __future__ import annotations

import time

from sim.calibration import measure_harness
from sim.calibration.measure_handoff import gil_handoffs, paired, visits


def test_a_visit_gives_a_forced_hand_off_and_its_return_together() -> None:
    forced, back = visits(12, 0)
    assert len(forced) == len(back)
    # most visits are kept; on a loaded machine a few share a gap and are left out
    assert 6 <= len(back) <= 12
    assert all(x > 0 for x in forced + back)


def test_the_three_hand_offs_are_sampled_apart() -> None:
    got = gil_handoffs(8)
    assert set(got) == {"gil_forced", "gil_back", "gil_handoff"}
    # one forced hand-off per kept visit, short (with a return) and long (with a release)
    assert len(got["gil_forced"]) == len(got["gil_back"]) + len(got["gil_handoff"])
    assert 4 <= len(got["gil_back"]) <= 8 and 4 <= len(got["gil_handoff"]) <= 8
    assert all(x > 0 for xs in got.values() for x in xs)


def test_a_gap_holding_one_visit_gives_its_two_hand_offs() -> None:
    forced, back = paired([(100, 200), (300, 420)], [(110, 150), (330, 400)])
    assert forced == [10 / 1e6, 30 / 1e6] and back == [50 / 1e6, 20 / 1e6]


def test_visits_in_one_gap_are_left_out() -> None:
    """The spinner off-core past the next visit: the GIL sat idle, which is no hand-off."""
    gaps = [(100, 200), (300, 900)]
    spans = [(110, 150), (330, 400), (600, 650)]
    assert paired(gaps, spans) == ([10 / 1e6], [50 / 1e6])


def test_a_visit_no_gap_covers_is_left_out() -> None:
    """No gap began before the visit (the spinner was not forced off), or none came after
    it (the spinner never ran again)."""
    assert paired([(160, 200)], [(110, 150)]) == ([], [])
    assert paired([(100, 200)], [(110, 150), (300, 350)]) == ([10 / 1e6], [50 / 1e6])


def test_no_visit_begins_before_the_spinner_runs() -> None:
    """A visit before the spinner's first stamp timed the clock's epoch (seconds since
    boot) as a hand-off; on a loaded machine the spinner's start can take several visits.
    Every sample lies within the measurement's own wall time."""
    t0 = time.perf_counter()
    forced, back = visits(12, 0)
    wall_ms = (time.perf_counter() - t0) * 1e3
    assert max(forced + back) < wall_ms


def test_a_hand_off_with_no_visit_kept_is_left_out_of_the_conditions(monkeypatch) -> None:
    """The model then draws it from the wake-up (Calibration.samples_ms's fallback), never
    from a median of nothing."""
    monkeypatch.setattr(
        measure_harness,
        "gil_handoffs",
        lambda: {"gil_forced": [0.02], "gil_back": [], "gil_handoff": [0.04]},
    )
    got = measure_harness.measure_conditions()
    assert "gil_back_ms" not in got and "gil_back_samples_ms" not in got
    assert got["gil_forced_samples_ms"] == [0.02] and got["gil_handoff_ms"] == 0.04
