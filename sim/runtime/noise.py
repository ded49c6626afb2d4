"""The harness's own noise floor: the latency kvsim adds around a request that does nothing.

A sample mimics one request whose CPU stage and transfer cost nothing: it is
planned to arrive after an idle gap (so the worker and the simulation thread are
asleep, as they are between real arrivals), and counts from that planned time, as
a request's latency does; it submits a no-op job to a worker pool and ends when
the job does. That is what the framework itself adds: the arrival timer's lateness,
the simulation loop's hand-over, the worker's wake-up and queue hand-off (or, for a
point that hands its requests over ahead, the load thread's own wake-up at the planned
time, with the job handed to it before: sim.point.arrivals). What
follows adds nothing more: the transfer starts when the load thread's work ended
and ends when the model says, however late the simulation thread notes either
(sim.runtime.env).

``run_point`` takes half the samples just before the point and half just after,
under the point's switch interval and worker count, and pools them: the floor
then reflects the machine's state around the measurement (a shared machine's
load drifts) without running beside the point, where it would compete for the
same GIL and measure the point's contention — the stall probe's job — rather
than the harness's cost.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import simpy

from sim import columns
from sim.runtime.env import HybridEnvironment
from sim.runtime.workers import WorkerPool
from sim.stats import percentiles

__all__ = ["NOISE_SAMPLES", "measure_noise_floor", "noise_floor_summary"]

#: Samples per side (before and after the point).
NOISE_SAMPLES = 40
#: Idle time before each sample: long enough that the threads go back to sleep.
_GAP_S = 0.5e-3


def _noop() -> None:
    return None


def measure_noise_floor(
    samples: int = NOISE_SAMPLES, workers: int = 1, ahead: bool = False
) -> list[float]:
    """``samples`` latencies (ms) that the harness adds to a request doing nothing.
    ``ahead``: handed over before its planned time, as the point's requests are where it
    leads (sim.point.arrivals): the load thread's own wake-up at that time, not the
    arrival timer's and the hand-over's."""
    env = HybridEnvironment(stall_timeout_s=30.0)
    lat: list[float] = []

    def proc() -> Generator[Any, Any, None]:
        for _ in range(samples):
            if ahead:
                planned = env.now + _GAP_S
                done = simpy.Event(env)
                pool.run_at(env.t0_ns + round(planned * 1e9), done.succeed, _noop)
                yield done
            else:
                yield env.timeout(_GAP_S)
                planned = env.now  # the timer's own time
                yield pool.submit(_noop)  # resumes at the time the no-op job ended
            lat.append((env.now - planned) * 1e3)

    pool = WorkerPool(env, workers, name="kvsim-noise", timed_answers=True)
    with pool:
        env.process(proc())
        env.run()
    return lat


def noise_floor_summary(*sides: Sequence[float]) -> dict[str, float]:
    """The summary columns of the pooled samples of every side."""
    pooled = [x for side in sides for x in side]
    p50, p99 = percentiles(pooled, [50, 99])
    return {columns.NOISE_FLOOR_P50_MS.name: p50, columns.NOISE_FLOOR_P99_MS.name: p99}
