"""The wake-up burst's bound (sim.model.cores): the advance a burst takes is repaid from the
thread's fair share, so short tasks back to back beside a heavy background load slow down
too (issue 43: holds under 1.5 ms gave identical results at background_load 0 and 1000)."""

from __future__ import annotations

import pytest

from sim.model.cores import WAKE_BURST_S, Cores
from sim.model.loop import Loop


def _ends(background: float, work_s: float, gap_s: float, n: int = 20) -> list[float]:
    """``n`` tasks of ``work_s``, each started ``gap_s`` after the last one ended (a thread
    that runs, sleeps, runs); the wall time each took."""
    loop = Loop()
    cores = Cores(loop, 2, background=background, burst_s=WAKE_BURST_S)
    took: list[float] = []

    def start(_a=None) -> None:
        t0 = loop.now
        cores.run(work_s, lambda _b: done(t0))

    def done(t0: float) -> None:
        took.append(loop.now - t0)
        if len(took) < n:
            loop.after(gap_s, start)

    start()
    loop.run()
    return took


@pytest.mark.parametrize("background", [2.0, 6.0])
def test_a_thread_that_sleeps_more_than_it_runs_keeps_its_bursts(background) -> None:
    """As measured: 0.3-1.5 ms runs after 5-20 ms asleep, beside CPU hogs, took their CPU
    time. At shares of 2/3 and 2/7 a 1 ms run every 10 ms is within its share."""
    assert _ends(background, 0.001, 0.010) == pytest.approx([0.001] * 20)


def test_short_runs_back_to_back_beside_a_background_load_share_like_any() -> None:
    """1 ms runs 0.2 ms apart need 83 % of a core; at a share of 2/5 the advance is spent
    after the first and later runs take their share's time (2.5 ms)."""
    took = _ends(4.0, 0.001, 0.0002)
    assert took[0] == pytest.approx(0.001)
    assert took[-1] == pytest.approx(0.001 * 5 / 2)


def test_background_load_1000_slows_short_runs() -> None:
    quiet = _ends(0.0, 0.001, 0.005)
    loaded = _ends(1000.0, 0.001, 0.005)
    assert quiet == pytest.approx([0.001] * 20)
    assert sum(loaded) > 100 * sum(quiet)
