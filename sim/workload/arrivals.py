"""Open-loop arrival processes: every arrival time of a point, drawn up front.

Each process turns the run's one generator into ``n`` absolute arrival times
(seconds of run time, the first at or after zero), so the same config and seed
give the same schedule however the threads interleave — and so a harness that
falls behind never shifts a later arrival: each is due at its own planned time,
not at a gap after the previous one was handled. A closed loop has no schedule
up front: a client's next request is due when its previous one completed plus
the think time (see ``sim.runtime.point``); a trace's times come from its clock.
"""

from __future__ import annotations

import numpy as np

from sim.config.workload import ConstantArrival, CurveArrival, OnOffArrival, PoissonArrival

__all__ = [
    "curve_times",
    "gaps_from_times",
    "onoff_times",
    "open_loop_block",
    "open_loop_gaps",
    "open_loop_times",
]

OpenLoopArrival = PoissonArrival | ConstantArrival | OnOffArrival | CurveArrival


def onoff_times(on_time_s: np.ndarray, on_s: float, off_s: float) -> np.ndarray:
    """Wall-clock times of events placed at ``on_time_s`` on a clock that runs only while on.

    Time ``t`` of on-time falls in on period ``floor(t / on_s)``, after that many
    off periods; the run starts at the beginning of an on period.
    """
    return on_time_s + np.floor(on_time_s / on_s) * off_s


def curve_times(arrival: CurveArrival, unit_time: np.ndarray) -> np.ndarray:
    """Times of events placed at ``unit_time`` on a clock that runs at the curve's rate:
    a unit-rate Poisson process mapped through the inverse of the cumulative rate (time
    rescaling), exact for a rate constant within each step; the curve repeats."""
    rates = np.asarray(arrival.rate_rps, dtype=np.float64)
    cum = np.concatenate(([0.0], np.cumsum(rates * arrival.step_s)))
    edges = np.arange(len(rates) + 1, dtype=np.float64) * arrival.step_s
    cycles = np.floor(unit_time / cum[-1])
    within = unit_time - cycles * cum[-1]
    return cycles * arrival.period_s + np.interp(within, cum, edges)


def gaps_from_times(times_s: np.ndarray) -> list[float]:
    """Gaps between successive arrival times (the first from time zero)."""
    return np.diff(np.asarray(times_s, dtype=np.float64), prepend=0.0).tolist()


def open_loop_times(arrival: OpenLoopArrival, rng: np.random.Generator, n: int) -> list[float]:
    """``n`` planned arrival times of ``arrival``; draws from ``rng`` in request order.

    A constant rate is computed as ``i / rate`` (not a running sum of gaps), so
    request ``i`` is planned at exactly that time.
    """
    if isinstance(arrival, PoissonArrival):
        return np.cumsum(rng.exponential(1.0 / arrival.rate_rps, size=n)).tolist()
    if isinstance(arrival, ConstantArrival):
        return (np.arange(n, dtype=np.float64) / arrival.rate_rps).tolist()
    if isinstance(arrival, OnOffArrival):
        on_time = np.cumsum(rng.exponential(1.0 / arrival.rate_rps, size=n))
        return onoff_times(on_time, arrival.on_ms / 1e3, arrival.off_ms / 1e3).tolist()
    if isinstance(arrival, CurveArrival):
        return curve_times(arrival, np.cumsum(rng.exponential(1.0, size=n))).tolist()
    raise TypeError(f"not an open-loop arrival process: {arrival!r}")


def open_loop_block(
    arrival: OpenLoopArrival, rng: np.random.Generator, first: int, n: int, clock: float
) -> tuple[np.ndarray, float]:
    """Arrival times of requests ``first`` to ``first + n - 1``, continuing ``clock`` (the
    running sum of the gaps so far, on-time for on/off): :func:`open_loop_times` drawn a
    block at a time, for plans too long to hold (sim.workload.plan). Returns the times and
    the clock to continue from."""
    if isinstance(arrival, ConstantArrival):
        return np.arange(first, first + n, dtype=np.float64) / arrival.rate_rps, clock
    if isinstance(arrival, CurveArrival):
        unit = clock + np.cumsum(rng.exponential(1.0, size=n))
        return curve_times(arrival, unit), float(unit[-1]) if n else clock
    on_time = clock + np.cumsum(rng.exponential(1.0 / arrival.rate_rps, size=n))
    end = float(on_time[-1]) if n else clock
    if isinstance(arrival, PoissonArrival):
        return on_time, end
    if isinstance(arrival, OnOffArrival):
        return onoff_times(on_time, arrival.on_ms / 1e3, arrival.off_ms / 1e3), end
    raise TypeError(f"not an open-loop arrival process: {arrival!r}")


def open_loop_gaps(arrival: OpenLoopArrival, rng: np.random.Generator, n: int) -> list[float]:
    """The gaps between the times of :func:`open_loop_times` (the first from zero)."""
    return gaps_from_times(np.asarray(open_loop_times(arrival, rng, n)))
