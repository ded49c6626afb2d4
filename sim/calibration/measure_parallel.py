"""How much slower a variant's CPU work runs when load threads run it at once, GIL off.

With the GIL off, load threads run Python on several cores at once and share a point's
variant objects (sim.runtime.point.build_variants); in the free-threaded build a thread's
CPU per request grows with the threads beside it. Measured here (free-threaded CPython
3.13.15, 3 Dec 2026, quiet): scalar at quickstart's geometry 1.87x at two threads at
once, 2.02x at four; numpy 1.25-1.50x. ``kvsim calibrate gil --python`` measures it in
that python with its GIL off and prints it beside the holds: what a variant's threads
cost each other with no GIL, at most.

"At most": the threads here run requests back to back, all at once. In real GIL-off runs,
where requests overlap now and then, the same regression of a request's thread CPU on its
overlap with others gave 1.31-1.57x at full overlap for scalar x 2 and ~1.08x for x 4
(docs/model-mode.md, "Load threads beside each other with no GIL"). Model mode uses it
with the GIL off as the slowdown at ``k`` load threads running Python at once, capped at
the cores (sim.model.cores, ``crowd``): measured 4 Dec 2026 it brought the GIL-off grid to
p50 6/6 and p99 5/6.

``k`` threads (2 to 4, more than the cores included) each run the same number of
requests at once through one shared set of variant objects; rounds of one and ``k``
alternate and the median ratio is kept, taken to full overlap (on a busy machine the
threads take turns and overlap less). The figure is thread CPU (``time.thread_time``):
a wait for a core is not in it.
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
