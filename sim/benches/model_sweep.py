"""A model-mode sweep timed end to end, through what ``kvsim run`` does.

``kvsim bench model`` measures how fast the model simulates; a sweep also plans
its points, writes every point's tables and status (with checksums), combines the
top-level tables, the manifest and ``results.json``. This runs an N-point sweep
into a temporary run directory through the session API ``kvsim run`` uses
(``plan_run``, ``open_session``, ``Session.run``) and splits its wall time into
the simulation (each point's ``run_point``, as its ``status.json`` records it)
and everything else — the cost a sweep adds to its points. Python's start-up
and imports are not in it (this process has them already).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = [
    "TARGET_SWEEP_S",
    "WORKERS",
    "SweepTiming",
    "print_sweep",
    "sweep_config",
    "synthetic_config",
    "time_sweep",
]

#: A 1,000-point sweep of 500 requests each should finish in under this (issue 17).
TARGET_SWEEP_S = 60.0
#: Worker counts of the bench's points (both benches).
WORKERS = (1, 2, 4, 8)


@dataclass(frozen=True)
class SweepTiming:
    """What one timed sweep took."""

    points: int
    requests_per_point: int
    #: Requests simulated, all points together.
    requests: int
    #: From planning the sweep to its last file written.
    wall_s: float
    #: Sum over points of the simulation (``run_point``) alone.
    simulation_s: float
    #: Processes the points ran in (``sim.sweep.executors.parallel``; 1: the sweep's own).
    workers: int = 1
    #: Seconds from the start until the first point began (planning, starting workers).
    start_s: float = 0.0

    @property
    def outputs_s(self) -> float:
        """Wall time outside the simulation: planning, tables, status, manifest. With
        several workers the simulation's share of the wall time is taken as its sum
        over them divided by their number (an estimate: it assumes they kept busy)."""
        return self.wall_s - self.simulation_s / self.workers

    def extrapolate(self, points: int = 1000, requests: int = 500) -> float:
        """Seconds a sweep of ``points`` × ``requests`` would take at this pace: the start
        once, the rest in proportion to the requests (simulated and written)."""
        scale = points * requests / max(self.requests, 1)
        return self.start_s + (self.wall_s - self.start_s) * scale


def synthetic_config(calibration: str, requests: int, rate: float, probe: bool) -> dict:
    """One model point like the synthetic sweep's (hold and workers: set per point or swept)."""
    return {
        "name": "bench-model",
        "seed": 11,
        "mode": "model",
        "machine": {"calibration": calibration},
        "model": {"regions": 4, "block_len": [4096], "block_size": 128},
        "workload": {
            "requests": requests,
            "arrival": {"kind": "poisson", "rate_rps": rate},
            "tokens": 16384,
        },
        "connector": {"variant": "synthetic", "workers": 1, "options": {"free_ms": 1.0}},
        "gil": {"probe": probe},
    }


def sweep_config(calibration: str, points: int, requests: int, rate: float) -> dict:
    """An N-point model sweep like the synthetic one: holds from 0 to 40 ms × 1–8 workers
    (``points`` is rounded up to a multiple of 4)."""
    holds = max(1, -(-points // len(WORKERS)))
    return {
        **synthetic_config(calibration, requests, rate, True),
        "name": "bench-model-sweep",
        "repeats": 1,  # the pace of points, not verdicts
        "sweep": {
            "connector.options.hold_ms": [round(40.0 * i / holds, 3) for i in range(holds)],
            "connector.workers": list(WORKERS),
        },
    }


def time_sweep(
    calibration: str, points: int, requests: int, rate: float, work: Path
) -> SweepTiming:
    """Run the sweep into ``work``/run (``work`` must exist) and time it."""
    # The sweep's packages load only when a sweep is timed, not with `kvsim bench`.
    from sim.preflight import parse_checked  # the pre-flight checks: only when timed
    from sim.rundir.layout import RepRun, read_status, rep_runs  # the run directory: idem
    from sim.sweep.executors.parallel import model_workers  # the sweep: only when timed
    from sim.sweep.session import open_session, plan_run  # heavy (simpy): only when timed

    path = work / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep_config(calibration, points, requests, rate)))
    out = work / "run"
    t0, t0_unix = time.perf_counter(), time.time()
    cfg, pts = parse_checked(path)
    plan = plan_run(cfg, pts, out, source=path)
    with open_session(plan, force=True) as session:
        outcome = session.run(plan)
    wall = time.perf_counter() - t0
    if not outcome.ok:
        raise RuntimeError(f"the timed sweep did not finish: {outcome.unfinished[:1]}")
    simulated, first = 0.0, float("inf")
    for rep in rep_runs(out, pts, cfg.repeats):
        data = read_status(rep.dir) or {}
        simulated += float(data["run_point_s"])
        first = min(first, float(data["started_unix"]))
    workers = model_workers([RepRun(p, 0, out) for p in pts])
    start = min(max(first - t0_unix, 0.0), wall)
    return SweepTiming(len(pts), requests, len(pts) * requests, wall, simulated, workers, start)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def print_sweep(calibration: str, points: int, requests: int, rate: float, work: Path) -> float:
    """Time one sweep and print it with the extrapolated 1,000-point time; return the latter."""
    t = time_sweep(calibration, points, requests, rate, work)
    where = f" in {t.workers} worker processes" if t.workers > 1 else ""
    sim = f"{t.simulation_s:.2f} s" + (" summed over them" if t.workers > 1 else "")
    print(
        f"  a {t.points}-point sweep of {t.requests_per_point} requests through kvsim run"
        f"{where}: {t.wall_s:.2f} s (simulation {sim}, outputs "
        f"{'~' if t.workers > 1 else ''}{t.outputs_s:.2f} s: "
        f"{1e6 * t.outputs_s / t.requests:.1f} µs per request; {t.start_s:.2f} s of it "
        "before the first point began)"
    )
    whole = t.extrapolate()
    verdict = "met" if whole < TARGET_SWEEP_S else "NOT met"
    serial = ""
    if t.workers == 1 and _cores() > 1:
        serial = (
            " (this sweep ran in one process, too small for the workers a 1,000-point one gets)"
        )
    print(
        f"  a 1,000-point sweep of 500 requests through kvsim run: ~{whole:.0f} s at that pace "
        f"(target: under {TARGET_SWEEP_S:.0f} s): {verdict}{serial}"
    )
    return whole
