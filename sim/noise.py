"""The harness's own noise floor: the latency kvsim adds around a job that does nothing.

A job that returns at once still crosses the worker queue, the inbox and the
simulation loop; the time from submission until the simulation thread resumes
is what the framework itself adds to every measured latency.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

from .env import HybridEnvironment
from .metrics import percentiles
from .workers import WorkerPool

__all__ = ["measure_noise_floor"]


def _noop() -> None:
    return None


def measure_noise_floor(samples: int = 50, workers: int = 1) -> tuple[float, float]:
    """(p50, p99) in ms of submit-to-resume latency for a no-op job."""
    env = HybridEnvironment(stall_timeout_s=30.0)
    lat: list[float] = []

    def proc() -> Generator[Any, Any, None]:
        for _ in range(samples):
            t0 = time.perf_counter_ns()
            yield pool.submit(_noop)
            lat.append((time.perf_counter_ns() - t0) / 1e6)

    pool = WorkerPool(env, workers, name="kvsim-noise")
    with pool:
        env.process(proc())
        env.run()
    p50, p99 = percentiles(lat, [50, 99])
    return p50, p99
