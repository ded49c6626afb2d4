"""Open-loop arrival processes: every inter-arrival gap of a point, drawn up front.

Each process turns the run's one generator into ``n`` gaps (seconds from the
previous arrival; the first from the start of the run), so the same config and
seed give the same arrival times however the threads interleave. A closed loop
has no gaps: its clients decide when to send (see ``sim.runtime.point``); a trace's
gaps come from its timestamps (:func:`gaps_from_times`).
"""

from __future__ import annotations

import numpy as np

from sim.config.workload import ConstantArrival, OnOffArrival, PoissonArrival

__all__ = ["gaps_from_times", "onoff_times", "open_loop_gaps"]

OpenLoopArrival = PoissonArrival | ConstantArrival | OnOffArrival


def onoff_times(on_time_s: np.ndarray, on_s: float, off_s: float) -> np.ndarray:
    """Wall-clock times of events placed at ``on_time_s`` on a clock that runs only while on.

    Time ``t`` of on-time falls in on period ``floor(t / on_s)``, after that many
    off periods; the run starts at the beginning of an on period.
    """
    return on_time_s + np.floor(on_time_s / on_s) * off_s


def gaps_from_times(times_s: np.ndarray) -> list[float]:
    """Gaps between successive arrival times (the first from time zero)."""
    return np.diff(np.asarray(times_s, dtype=np.float64), prepend=0.0).tolist()


def open_loop_gaps(arrival: OpenLoopArrival, rng: np.random.Generator, n: int) -> list[float]:
    """``n`` inter-arrival gaps of ``arrival``; draws from ``rng`` in request order."""
    if isinstance(arrival, PoissonArrival):
        return rng.exponential(1.0 / arrival.rate_rps, size=n).tolist()
    if isinstance(arrival, ConstantArrival):
        return [0.0] + [1.0 / arrival.rate_rps] * (n - 1) if n else []
    if isinstance(arrival, OnOffArrival):
        on_time = np.cumsum(rng.exponential(1.0 / arrival.rate_rps, size=n))
        return gaps_from_times(onoff_times(on_time, arrival.on_ms / 1e3, arrival.off_ms / 1e3))
    raise TypeError(f"not an open-loop arrival process: {arrival!r}")
