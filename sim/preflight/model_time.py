"""How long model-mode points will take: a sample of each simulated here, and scaled.

A model point's time is the CPU its simulation takes, not its simulated span (real
mode's bound, sim.preflight.budget): ``kvsim validate`` said nothing for model-mode
configs. That CPU is linear in a point's requests at its rate: the work per request,
plus the probe's wake-ups and the engine's steps per simulated second, whose span grows
with the requests at a fixed rate. So the first :data:`SAMPLE_REQUESTS` requests of each
model point are simulated in this process on the core the sweep will use (sim.native;
a sweep runs model points in its own process, sim.sweep.runner), timed by CPU, and
scaled to the point's count; :data:`POINT_SETUP_CPU_S` is added per point run and
:data:`RUN_START_CPU_S` once. CPU, not wall time: on a busy machine the wall time is
longer, so the line gives the load average beside it. Sampling stops after
:data:`SAMPLE_BUDGET_S` of CPU; the points left take the slowest per-request cost sampled.

Checked on 3 Dec 2026 (interpreted core, load average 12-16 on 2 cores): a 20,000-request
numpy point estimated at 65 µs of CPU a request ran at 76 µs in ``kvsim run`` (the rows it
writes are not in the sample).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sim.config.experiment import Point
from sim.config.workload import TraceArrival
from sim.model.coverage import point_calibration
from sim.native import native_state

__all__ = [
    "POINT_SETUP_CPU_S",
    "RUN_START_CPU_S",
    "SAMPLE_BUDGET_S",
    "SAMPLE_REQUESTS",
    "ModelTime",
    "estimate_model_time",
]

#: Requests simulated per point for the estimate (all of them where a point has fewer).
SAMPLE_REQUESTS = 200
#: CPU seconds the sampling may take in all before the remaining points are scaled from it.
SAMPLE_BUDGET_S = 1.5
#: CPU of a model point run beyond its requests (its spec, status and tables): measured
#: 0.07 s, the marginal CPU of five more runs of 5,000 requests less their requests' share
#: (3 Dec 2026, interpreted core, load average 14 on 2 cores).
POINT_SETUP_CPU_S = 0.1
#: CPU of ``kvsim run`` itself before and after its points (imports, plan, the combined
#: tables): measured 1.1 s, a one-point run of 1,000 requests less the point (same day).
RUN_START_CPU_S = 1.1


@dataclass(frozen=True)
class ModelTime:
    """CPU seconds each model point is expected to take, and what that is based on."""

    #: Per model point (one repeat, its set-up included), in the order given.
    point_s: tuple[float, ...]
    #: Points sampled (the others scaled from the slowest sampled).
    sampled: int
    #: CPU the sampling took here.
    sample_cpu_s: float
    #: The model core that ran the samples: compiled or interpreted (sim.native).
    core: str

    def total_s(self, repeats: int) -> float:
        """Every model point run, ``repeats`` each, and kvsim run's own start."""
        return sum(self.point_s) * repeats + RUN_START_CPU_S

    def basis(self) -> str:
        """What the figures are made of, in one clause."""
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        cores = os.cpu_count() or 1
        return (
            f"CPU time: up to {SAMPLE_REQUESTS} requests of {self.sampled} of "
            f"{len(self.point_s)} model point(s) simulated here on the {self.core} core "
            f"({self.sample_cpu_s:.2f} s) and scaled, + {POINT_SETUP_CPU_S:g} s a point run, "
            f"+ {RUN_START_CPU_S:g} s for kvsim run; more wall time on a busy machine: "
            f"load average {load:.1f} on {cores} cores now"
        )


def estimate_model_time(points: Sequence[Point], counts: Sequence[int]) -> ModelTime | None:
    """The expected CPU of each model-mode point of ``points`` (``counts``: the requests
    each plans); None when there is none. Trace replays are not sampled (their
    requests come from the trace): they take the slowest per-request cost sampled."""
    # deferred: the model's loop and driver (simpy) load only when a config has model points
    from sim.model.driver import run_model_point

    model = [(p, n) for p, n in zip(points, counts, strict=True) if p.config.mode == "model"]
    if not model:
        return None
    memo: dict = {}
    per_request: dict[int, float] = {}
    spent = 0.0
    warm = True
    for p, n in model:
        if spent >= SAMPLE_BUDGET_S or isinstance(p.config.workload.arrival, TraceArrival):
            continue
        cal = point_calibration(p.config, memo)
        if warm:  # numpy's and the loop's first calls, untimed: they are not per request
            run_model_point(_shrunk(p, 10), calibration=cal)
            warm = False
        sample = _shrunk(p, min(n, SAMPLE_REQUESTS))
        c0 = time.process_time()
        run_model_point(sample, calibration=cal)
        used = time.process_time() - c0
        spent += used
        per_request[p.index] = used / max(1, sample.config.workload.requests)
    slowest = max(per_request.values(), default=0.0)
    point_s = tuple(POINT_SETUP_CPU_S + n * per_request.get(p.index, slowest) for p, n in model)
    core = "compiled" if native_state() == "native" else "interpreted"
    return ModelTime(point_s, len(per_request), spent, core)


def _shrunk(point: Point, requests: int) -> Point:
    """``point`` with ``requests`` requests, nothing else changed (its rate: its span
    shrinks with it, so probe and engine per request stay as they are)."""
    cfg = point.config
    workload = cfg.workload.model_copy(update={"requests": requests})
    return Point(point.index, point.axes, cfg.model_copy(update={"workload": workload}))
