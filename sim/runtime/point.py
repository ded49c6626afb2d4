"""Run one experiment point in real mode: plan, warm up, drive threads, collect records."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Generator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from connectors import registry
from connectors.token_database import TokenDatabase
from sim import columns
from sim.config.experiment import ExperimentConfig, Point
from sim.instruments.heap import live_heap
from sim.instruments.threadtime import ThreadTimes
from sim.point.addons import start_up
from sim.point.arrivals import HAND_OVER_LEAD_S, drive_arrivals
from sim.point.record_sink import RowWriter, point_sink
from sim.point.result import PointResult, point_result
from sim.runtime.addons import build_addons
from sim.runtime.env import HybridEnvironment
from sim.runtime.noise import measure_noise_floor, noise_floor_summary
from sim.runtime.pipeline import LoadPipeline, prepare_jobs
from sim.runtime.run_clock import RunClock
from sim.runtime.workers import WorkerPool
from sim.store.factory import open_store
from sim.workload.plan import Workload, plan_workload

__all__ = ["PointResult", "build_variants", "run_point", "switch_interval"]

ProgressFn = Callable[[int, int], None]


@contextmanager
def switch_interval(ms: float) -> Generator[None, None, None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(ms / 1e3)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def build_variants(cfg: ExperimentConfig, store: Any = None) -> list[Any]:
    """One variant instance per KV-cache group, warmed up.

    With a real store the regions' base addresses are its buffers' real pointers.
    """
    cls = registry.get_address_variant(cfg.connector.variant)
    options = cls.validate_options(cfg.connector.options)
    dbs = [TokenDatabase.from_geometry(cfg.model, g) for g in range(cfg.model.kv_groups)]
    if store is not None and hasattr(store, "base_addrs"):
        dbs = [
            replace(db, kv_caches_base_addr=tuple(store.base_addrs(g))) for g, db in enumerate(dbs)
        ]
    variants = [cls(db, options) for db in dbs]
    for v in variants:
        v.warm_up()
    return variants


def _drive(
    env: HybridEnvironment, pipeline: LoadPipeline, workload: Workload, lead_s: float
) -> None:
    """Hand each request to the pipeline at its planned time, or up to ``lead_s`` ahead of
    it; run time zero is *now* (sim.point.arrivals: the one schedule of both modes, each
    timer a callback on the clock)."""
    drive_arrivals(RunClock(env, lead_s), 0.0, workload, pipeline.inject)


def run_point(
    point: Point,
    repeat: int = 0,
    progress: ProgressFn | None = None,
    write_rows: RowWriter | None = None,
) -> PointResult:
    """Run one point × repeat. With ``write_rows`` the requests' rows go to it as they
    finish (the ones ``output.requests`` keeps) and the result holds no records; without,
    the result holds them all (sim.point.record_sink)."""
    cfg = point.config
    if cfg.mode == "model":  # sim.sweep.child.run_in_mode picks the mode; not here
        raise ValueError(f"{point.label}: a model-mode point runs in sim.model.driver")
    rng = np.random.default_rng([cfg.seed, repeat])
    workload = plan_workload(cfg, rng)
    addons = build_addons(cfg)
    all_done: Any = None
    total = len(workload)  # read once: on_done runs for every request

    def on_done(done: int) -> None:
        if progress is not None:
            progress(done, total)
        if done == total:
            all_done.succeed()

    with ExitStack() as stack:
        store = stack.enter_context(open_store(cfg, workload))  # a real store puts first
        variants = build_variants(cfg, store)
        start_up(addons)  # the engine's start-up comes before its heap is settled
        # The jobs built before the load (not the harness's cost during it) settle with the
        # heap: made after its collection, their few containers each (4,000 at 1,000 req/s
        # for 2 s) counted toward a full collection in the load, on the simulation thread.
        jobs = prepare_jobs(workload, cfg.model)
        # the heap is built (and collected or frozen) before anything is measured
        heap = stack.enter_context(live_heap(cfg.engine.heap))
        stack.enter_context(switch_interval(cfg.gil.switch_interval_ms))
        # Ahead only where the arrival does nothing else on the simulation thread (a real
        # store admits the request, its slots, at its time: sim.point.arrivals)
        lead_s = HAND_OVER_LEAD_S if store.immediate else 0.0
        noise_before = measure_noise_floor(workers=cfg.connector.workers, ahead=lead_s > 0)
        env = HybridEnvironment(stall_timeout_s=cfg.limits.request_timeout_s + 5.0)
        store.attach(env)
        pool = WorkerPool(env, cfg.connector.workers, timed_answers=True)
        pipeline = LoadPipeline(
            env,
            pool,
            store,
            variants,
            cfg.connector.handler,
            cfg.model,
            on_done,
            cfg.limits.request_timeout_s,
        )
        pipeline.adopt(jobs)
        del jobs  # the pipeline drops each as its request ends
        all_done = env.event()
        with pool:
            try:
                for addon in addons:
                    addon.attach(env)  # may run a baseline first (engine alone): not timed
                # The harness's own cost: the simulation thread's CPU time over the load,
                # and of it the part outside its waits for the next event — it holds the
                # GIL whenever it runs Python, and waits with the GIL released.
                cpu0_ns = time.thread_time_ns()
                waits0, asleep0_ns = env.waits, env.asleep_cpu_ns  # not the baseline's
                env.process(pipeline.watchdog())
                _drive(env, pipeline, workload, lead_s)
                env.run(until=all_done)
                harness_cpu_ns = time.thread_time_ns() - cpu0_ns
                harness_ns = harness_cpu_ns - (env.asleep_cpu_ns - asleep0_ns)
                harness_waits = env.waits - waits0
                # The load's span on the run's clock: to the last request's end, not to
                # when the loop noticed it (a quiet timer may be noticed late).
                elapsed = env.run_time()
            finally:
                for addon in reversed(addons):
                    addon.detach()
        noise_after = measure_noise_floor(workers=cfg.connector.workers, ahead=lead_s > 0)
        store_summary = store.summary()
    sink = point_sink(cfg, len(workload), write_rows)
    threads = ThreadTimes(pipeline.gil_on)
    for rec in pipeline.records():
        sink.add(rec)
        threads.add(rec)
    sink.close()
    n = sink.finished
    harness = {
        columns.HARNESS_US_PER_REQUEST.name: harness_ns / 1e3 / n if n else math.nan,
        columns.HARNESS_CPU_US_PER_REQUEST.name: harness_cpu_ns / 1e3 / n if n else math.nan,
        columns.HARNESS_WAKES_PER_REQUEST.name: harness_waits / n if n else math.nan,
    }
    figures = (
        harness,
        noise_floor_summary(noise_before, noise_after),
        workload.stats,
        heap.summary(),
        store_summary,
        threads.summary(),
    )
    return point_result(point, repeat, sink, elapsed, figures, addons)
