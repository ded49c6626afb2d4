"""``kvsim bench model``: how fast model mode simulates, in simulated requests per second.

Runs a sweep of model-mode points in this process, the way ``kvsim run`` runs them
(no child process), and prints simulated requests per wall-clock second, with and
without the sentinel probe (the probe wakes every 2 ms of simulated time, which
costs events when the GIL is busy), what a 1,000-point sweep of 500 requests
would take at that rate, and whether each rate meets the target. The calibration
file is a made-up one written to a temporary directory unless ``--calibration``
names a real one: speed does not depend on the costs' exact values, only on how
busy they make the GIL.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from sim.benches.model_sweep import WORKERS, print_sweep, synthetic_config
from sim.config import ExperimentConfig, Point
from sim.files.scratch import scratch_dir

HELP = "simulated requests per second of model mode (target: 20,000)"

#: Simulated requests per wall-clock second model mode should reach (issue: a 1,000-point
#: sweep of 500 requests in under a minute).
TARGET_RPS = 20_000

#: A sweep like the synthetic one: holds of 0-40 ms, 1-8 workers, Poisson arrivals.
_HOLDS = (0.0, 5.0, 10.0, 20.0, 40.0)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--requests",
        type=int,
        default=500,
        help="requests per point (default 500); one point of this many is also run in a "
        "fresh process for its time and peak RSS (above 20,000: that point alone)",
    )
    p.add_argument("--calibration", help="calibration file (default: a made-up one)")
    p.add_argument("--rate", type=float, default=15.0, help="arrivals per second (default 15)")
    p.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="times each configuration is run; the fastest counts (default 3: a shared "
        "machine's other load only ever slows a run down)",
    )
    p.add_argument(
        "--tree",
        type=int,
        default=0,
        metavar="REQUESTS",
        help="also run a 3-repeat point through kvsim run at 10,000 and at REQUESTS a point "
        "and print each run's peak memory, every process counted, and their ratio "
        "(sim.benches.process_tree; 1000000: ~10 min on 2 cores; default 0: skip)",
    )
    p.add_argument(
        "--sweep-points",
        type=int,
        default=100,
        help="also time a sweep of this many points through kvsim run, outputs included "
        "(default 100: enough to run on every core, as a 1,000-point sweep does; 0: skip)",
    )


def _stand_in_calibration(path: Path) -> Path:
    data = {
        "kind": "kvsim-calibration",
        "created": "kvsim bench model (stand-in costs)",
        "machine": {"cores": 2},
        "switch_interval_ms": 5.0,
        "harness": {
            "sim_cpu_per_request_ms": 0.3,
            "wake_ms": 0.03,
            "timer_late_ms": 0.08,
            "sleep_late_ms": 0.08,
            "probe_late_ms": 0.03,
            "probe_hold_ms": 0.01,
        },
        "variants": {"synthetic": {"overhead_ms": 0.02}},
    }
    path.write_text(json.dumps(data))
    return path


def _points(cal: str, requests: int, rate: float, probe: bool) -> list[Any]:
    base = synthetic_config(cal, requests, rate, probe)
    out = []
    for hold in _HOLDS:
        for workers in WORKERS:
            connector = {**base["connector"], "workers": workers}
            connector["options"] = {"hold_ms": hold, **connector["options"]}
            cfg = ExperimentConfig.model_validate({**base, "connector": connector})
            out.append(Point(len(out), {"hold_ms": hold, "workers": workers}, cfg))
    return out


def _rate(points: list[Any]) -> tuple[float, float, int, float]:
    """(requests per wall second, per CPU second of this process, requests, wall s)."""
    from sim.model.coverage import point_calibration  # the model: only when this bench runs
    from sim.model.driver import run_model_point  # heavy (simpy): only when this bench runs

    cal = point_calibration(points[0].config)
    n = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for p in points:
        n += len(run_model_point(p, calibration=cal).records)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    return n / dt, n / max(dc, 1e-9), n, dt


#: Past this many requests per point the 20-point rate sweep is left out (it would run
#: 20 × 2 × --repeat such points); the one-point time and memory line is printed alone.
MAX_SWEEP_REQUESTS = 20_000


def _point_line(cal: str, requests: int, rate: float, tmp: Path) -> str:
    """One point of ``requests`` in a fresh process (sim.benches.model_point): the point's
    own wall time to three figures (one decimal said "0.0 s" for 500 requests) and the
    process's, start-up and imports included, which a sweep's point child also pays."""
    # Not with `kvsim bench --help`: the point's launcher, and the pre-flight estimate.
    from sim.benches.model_point import measure_point, point_config  # not with --help
    from sim.preflight.budget import estimate_point, human_seconds  # workload, store

    t0 = time.perf_counter()
    res = measure_point(cal, requests, rate, tmp)
    process_s = time.perf_counter() - t0
    cfg = ExperimentConfig.model_validate(point_config(cal, requests, rate))
    est_mb = estimate_point(cfg, requests).memory_bytes / 2**20  # MiB, as max_rss_mb
    return (
        f"  one point of {res.requests:,} requests in a fresh process: "
        f"{human_seconds(res.wall_s)} to simulate ({res.requests / res.wall_s:,.0f} "
        "requests/s, the probe on, every row written to requests.csv), "
        f"{human_seconds(process_s)} with the process's start-up and imports; peak RSS "
        f"{res.max_rss_mb:,.0f} MB (start-up included), kvsim validate's estimate "
        f"{est_mb:,.0f} MB ({res.max_rss_mb / est_mb:.2f}× of it; within 2× is the aim)"
    )


def main(args: argparse.Namespace) -> int:
    # its own scratch directory (rows of up to 10^7 requests), after any that a killed
    # bench left (sim.files.scratch)
    with scratch_dir("bench-model") as tmp:
        cal = args.calibration or str(_stand_in_calibration(tmp / "calibration.json"))
        # the native core's state: not with `kvsim bench --help`
        from sim.native import native_state

        if args.requests > MAX_SWEEP_REQUESTS:
            print(
                f"model mode ({native_state()} core): one synthetic point (hold 5 ms, "
                f"2 workers, the probe on, every row kept) at {args.rate:g}/s; the 20-point "
                f"rate sweep runs at --requests {MAX_SWEEP_REQUESTS:,} or fewer"
            )
            print(_point_line(cal, args.requests, args.rate, tmp))
            _print_tree(cal, args.tree, tmp)
            _print_load()
            return 0

        print(
            f"model mode ({native_state()} core): {len(_HOLDS) * len(WORKERS)} points "
            "(synthetic hold "
            f"{_HOLDS[0]:g}–{_HOLDS[-1]:g} ms × {WORKERS[0]}–{WORKERS[-1]} workers), "
            f"{args.requests} requests each at {args.rate:g}/s"
        )
        # Warm up untimed (first imports, numpy's first calls, the calibration's caches):
        # the rates below are the simulation's steady pace, not start-up.
        _rate(_points(cal, 50, args.rate, True)[-1:])
        results = {}
        for probe in (False, True):
            points = _points(cal, args.requests, args.rate, probe)
            runs = [_rate(points) for _ in range(max(1, args.repeat))]
            rate, cpu_rate, n, dt = max(runs)
            results[probe] = rate
            label = "with probe   " if probe else "without probe"
            spread = f", slowest run {min(runs)[0]:,.0f}" if len(runs) > 1 else ""
            print(
                f"  {label}: {rate:9,.0f} simulated requests/s of wall time, "
                f"{cpu_rate:9,.0f} per CPU second ({n} requests in {dt:.2f} s; "
                f"fastest of {len(runs)}{spread})"
            )
        worst = min(results.values())
        sweep_s = 1000 * 500 / worst
        print(
            f"  a 1,000-point sweep of 500 requests: ~{sweep_s:.0f} s of simulation at the "
            f"slower wall rate (target: under 60 s; 20,000 requests/s)"
        )
        for probe, rate in results.items():
            label = "with probe   " if probe else "without probe"
            verdict = "met" if rate >= TARGET_RPS else "NOT met"
            print(
                f"  target {TARGET_RPS:,} requests/s {label}: {verdict} ({rate / TARGET_RPS:.2f}×)"
            )
        print(_point_line(cal, args.requests, args.rate, tmp))
        _print_tree(cal, args.tree, tmp)
        _print_load()
        if args.sweep_points > 0:
            print_sweep(cal, args.sweep_points, args.requests, args.rate, tmp)
    return 0


def _print_tree(cal: str, requests: int, tmp: Path) -> None:
    if requests > 0:
        from sim.benches.process_tree import print_tree  # only with --tree

        print_tree(cal, requests, tmp)


def _print_load() -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"  (load average {load:.1f} on {os.cpu_count()} cores: on a shared machine the "
        "wall rate is the CPU rate times the share this process gets)"
    )
