"""The wake-up burst's bound (sim.model.cores): a background load far beyond what the burst
was measured at slows short tasks too (issue 43: 0 and 1000 gave identical results)."""

from __future__ import annotations

import pytest

from sim.model.cores import WAKE_BURST_MIN_SHARE, WAKE_BURST_S, Cores
from sim.model.loop import Loop


def _end(background: float, work_s: float) -> tuple[float, float]:
    loop = Loop()
    cores = Cores(loop, 2, background=background, burst_s=WAKE_BURST_S)
    end: dict[str, float] = {}
    cores.run(work_s, lambda _a: end.setdefault("t", loop.now))
    loop.run()
    return end["t"], cores.busy_core_s


@pytest.mark.parametrize("background", [0.0, 2.0, 6.0])
def test_a_short_task_runs_at_full_speed_down_to_a_quarter_core_share(background) -> None:
    """Shares of 1, 2/3 and 2/7 (≥ WAKE_BURST_MIN_SHARE): a 1 ms task takes 1 ms."""
    assert _end(background, 0.001) == (pytest.approx(0.001), pytest.approx(0.001))


def test_far_below_a_quarter_core_share_a_short_task_slows_with_the_share() -> None:
    """background_load 1000 on 2 cores: a share of 2/1001 is 1/125 of the quarter core
    down to which the burst runs at full speed, so a 1 ms task takes ~125 ms; its CPU
    (the cores' busy time) is still 1 ms."""
    end, busy = _end(1000.0, 0.001)
    share = 2 / 1001
    assert end == pytest.approx(0.001 * WAKE_BURST_MIN_SHARE / share)
    assert busy == pytest.approx(0.001)
    assert _end(1000.0, 0.001)[0] > 100 * _end(0.0, 0.001)[0]
