"""calibrate times the GIL's own hand-offs (sim.calibration.measure_handoff): each visit
gives one forced hand-off and, found in the spinner's gaps, its return; every sample is a
positive stretch without the GIL, never a time asserted."""

from __future__ import annotations

import time

from sim.calibration.measure_handoff import gil_handoffs, visits


def test_every_visit_gives_a_forced_hand_off_and_nearly_every_one_its_return() -> None:
    forced, back = visits(12, 0)
    assert len(forced) == 12
    # the last visit's return is not seen: the spinner stops before its next stamp
    assert 10 <= len(back) <= 12
    assert all(x > 0 for x in forced + back)


def test_the_three_hand_offs_are_sampled_apart() -> None:
    got = gil_handoffs(8)
    assert set(got) == {"gil_forced", "gil_back", "gil_handoff"}
    assert len(got["gil_forced"]) == 16  # one per visit, short and long
    assert 6 <= len(got["gil_back"]) <= 8 and 6 <= len(got["gil_handoff"]) <= 8
    assert all(x > 0 for xs in got.values() for x in xs)


def test_no_visit_begins_before_the_spinner_runs() -> None:
    """A visit before the spinner's first stamp timed the clock's epoch (seconds since
    boot) as a hand-off; on a loaded machine the spinner's start can take several visits.
    Every sample lies within the measurement's own wall time."""
    t0 = time.perf_counter()
    forced, back = visits(12, 0)
    wall_ms = (time.perf_counter() - t0) * 1e3
    assert max(forced + back) < wall_ms
