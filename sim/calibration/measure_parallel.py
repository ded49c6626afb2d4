"""How much slower a variant's CPU work runs when load threads run it in parallel, GIL off.

With the GIL off, load threads run Python on several cores at once, and the model's
cores would give each its full speed. Measured on this 2-core machine (free-threaded
CPython 3.13, 3 Dec 2026), they do not get it: scalar at quickstart's geometry took
59.5 ms of thread CPU a request alone and 105.6 ms with two threads at it in parallel
(1.78x: two requests in 1.31 s of wall, against 0.73 s for one), because the threads
share one set of variant objects (a point's load threads share its variants:
sim.runtime.point.build_variants) and every reference to a shared object is an atomic
update of a count another core keeps writing; numpy, whose work is in kernels, slowed
little. The real GIL-off runs show it as a thread CPU per request that grows with the
workers (scalar x 2: 85 ms a request, x 1: 64), and a model without it ran their p99
32-49 % short (docs/model-mode.md, "Parallel slowdown").

So calibration measures it, in the interpreter the model stands for with its GIL off:
``k`` threads (2 to 4, more than the cores included: they take turns there, and
what a turn costs is measured with the rest) each run the same number of requests at once, through
the same shared variants, and their mean thread CPU per request over one thread's alone
is the slowdown at ``k``; rounds of one and ``k`` alternate and the median ratio is kept,
so that a drift of the machine's speed cancels. Model mode (sim.model.contention) slows
a load thread's CPU by the slowdown at the number of load threads running at once.
The figure is thread CPU (``time.thread_time``), so a thread's wait for a core is not in
it: the model's cores add that.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from sim.calibration.measure import request_config
from sim.model.calibration import PARAMETRIC
from sim.process.interpreter import gil_enabled
from sim.runtime.pipeline import cpu_stages
from sim.runtime.point import build_variants
from sim.workload.plan import PlannedRequest

__all__ = ["MIN_OVERLAP", "ROUNDS", "measure_parallel", "parallel_slowdown"]

#: Alternating rounds of one thread and of ``k`` (the median ratio is kept).
ROUNDS = 3
#: Requests each thread runs in a round.
JOBS = 6
#: Below this overlap the threads hardly ran at once (a busy machine): the ratio is kept
#: as measured, not extrapolated, and calibrate says so.
MIN_OVERLAP = 0.5
#: The geometry measured (quickstart's: 1,024 chunks of 61 regions, one group; the spread's).
CHUNKS, REGIONS = 1024, 61


def _cpu_per_job(variants: list[Any], cfg: Any, threads: int, seed: int) -> tuple[float, float]:
    """(mean thread CPU (s) per request, overlap): ``threads`` threads each running
    :data:`JOBS` different requests at once (the jobs built before they start). The
    overlap is how much of the round they really ran at once: 1 when their CPU added up
    to ``min(threads, cores)`` times the wall time, 0 when one ran at a time (a busy
    machine)."""
    tokens = cfg.workload.tokens.value
    jobs = [
        [
            PlannedRequest(i, tokens, 0.0, seed + 1000 * t + i, 0.5).job(cfg.model)
            for i in range(JOBS)
        ]
        for t in range(threads)
    ]
    start = threading.Barrier(threads + 1)
    cpu: list[float] = []

    def run(own: list[Any]) -> None:
        start.wait()
        for job in own:
            t0 = time.thread_time()
            cpu_stages(variants, cfg.connector.handler, job)
            cpu.append(time.thread_time() - t0)  # list.append is atomic, GIL or not

    pool = [
        threading.Thread(target=run, args=(j,), name=f"kvsim-par-{n}") for n, j in enumerate(jobs)
    ]
    for th in pool:
        th.start()
    start.wait()
    t0 = time.perf_counter()
    for th in pool:
        th.join()
    wall = time.perf_counter() - t0
    at_once = min(threads, os.cpu_count() or 1)  # beyond the cores they take turns
    overlap = (sum(cpu) / wall - 1.0) / (at_once - 1) if at_once > 1 and wall > 0 else 1.0
    return statistics.fmean(cpu), min(1.0, max(0.0, overlap))


def parallel_slowdown(variant: str, handler: str, threads: int) -> dict[str, dict[str, float]]:
    """Per ``k`` from 2 to ``threads``: ``slowdown``, the thread CPU per request with ``k``
    threads at once over one thread's alone, taken to the threads always at once
    (``1 + (ratio - 1) / overlap``: on a busy machine they overlap less and slow less),
    with the ``ratio`` and ``overlap`` measured (medians over :data:`ROUNDS`)."""
    cfg = request_config(variant, handler, CHUNKS, REGIONS, 1)
    variants = build_variants(cfg)  # one set, shared, as a point's load threads share it
    _cpu_per_job(variants, cfg, 1, 99)  # warm-up: first calls, caches, the allocator
    out: dict[str, dict[str, float]] = {}
    for k in range(2, threads + 1):
        ratios, overlaps = [], []
        for r in range(ROUNDS):
            alone, _ = _cpu_per_job(variants, cfg, 1, 10_000 * r)
            together, overlap = _cpu_per_job(variants, cfg, k, 10_000 * r + 5_000)
            ratios.append(together / alone if alone > 0 else 1.0)
            overlaps.append(overlap)
        ratio, overlap = statistics.median(ratios), statistics.median(overlaps)
        slowdown = 1.0 + (ratio - 1.0) / overlap if overlap >= MIN_OVERLAP else ratio
        out[str(k)] = {
            "slowdown": round(max(1.0, slowdown), 4),
            "ratio": round(ratio, 4),
            "overlap": round(overlap, 3),
        }
    return out


def measure_parallel(
    keys: Sequence[str], threads: int, say: Callable[[str], None] = lambda _m: None
) -> dict[str, dict[str, dict[str, float]]]:
    """The slowdown of each calibrated ``variant/handler`` key (parametric variants are a
    set time: none); refused under a GIL, where threads never run Python at once."""
    if gil_enabled():
        raise RuntimeError("the parallel slowdown is measured with the GIL off (PYTHON_GIL=0)")
    out: dict[str, dict[str, dict[str, float]]] = {}
    for key in keys:
        variant, _, handler = key.partition("/")
        if variant in PARAMETRIC or not handler:
            continue
        out[key] = found = parallel_slowdown(variant, handler, threads)
        for k, m in found.items():
            busy = (
                f"; the threads ran at once {m['overlap']:.0%} of the time: calibrate on a "
                "quieter machine"
                if m["overlap"] < MIN_OVERLAP
                else ""
            )
            say(
                f"parallel slowdown, GIL off: {key} x {k} threads {m['slowdown']:.2f} "
                f"(CPU per request x{m['ratio']:.2f} at overlap {m['overlap']:.2f}){busy}"
            )
    return out
