"""Run one experiment point in real mode: plan, warm up, drive threads, collect records."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from connectors import registry
from connectors.token_database import TokenDatabase
from sim.config import ExperimentConfig, Point
from sim.instruments.noise import measure_noise_floor, noise_floor_summary
from sim.runtime.addons import build_addons
from sim.runtime.env import HybridEnvironment
from sim.runtime.metrics import summarize_requests
from sim.runtime.pipeline import LoadPipeline
from sim.runtime.records import RequestRecord
from sim.runtime.workers import WorkerPool
from sim.store.model import StoreModel
from sim.workload.plan import Workload, plan_workload

__all__ = ["PointResult", "build_variants", "run_point", "switch_interval"]

ProgressFn = Callable[[int, int], None]


@dataclass
class PointResult:
    point: Point
    repeat: int
    records: list[RequestRecord]
    summary: dict[str, Any]
    #: Extra long-format tables from add-ons: file stem -> rows.
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@contextmanager
def switch_interval(ms: float) -> Generator[None, None, None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(ms / 1e3)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def build_variants(cfg: ExperimentConfig) -> list[Any]:
    """One variant instance per KV-cache group, warmed up."""
    cls = registry.get_address_variant(cfg.connector.variant)
    options = cls.validate_options(cfg.connector.options)
    variants = [
        cls(TokenDatabase.from_geometry(cfg.model, g), options) for g in range(cfg.model.kv_groups)
    ]
    for v in variants:
        v.warm_up()
    return variants


def _drive(env: HybridEnvironment, pipeline: LoadPipeline, workload: Workload) -> None:
    if workload.closed_clients is None:

        def arrivals() -> Generator[Any, Any, None]:
            for req in workload:
                yield env.timeout(req.gap_s or 0.0)
                env.process(pipeline.handle(req))

        env.process(arrivals())
    else:
        queue = iter(workload)

        def client() -> Generator[Any, Any, None]:
            for req in queue:
                yield env.process(pipeline.handle(req))
                if workload.think_s:
                    yield env.timeout(workload.think_s)

        for _ in range(workload.closed_clients):
            env.process(client())


def run_point(point: Point, repeat: int = 0, progress: ProgressFn | None = None) -> PointResult:
    cfg = point.config
    if cfg.mode == "model":  # a discrete-event simulation: no threads, no wall clock
        from sim.model.driver import run_model_point

        return run_model_point(point, repeat, progress)
    rng = np.random.default_rng([cfg.seed, repeat])
    workload = plan_workload(cfg, rng)
    variants = build_variants(cfg)
    records: list[RequestRecord] = []
    addons = build_addons(cfg)
    all_done: Any = None

    def on_done(rec: RequestRecord) -> None:
        records.append(rec)
        if progress is not None:
            progress(len(records), len(workload))
        if len(records) == len(workload):
            all_done.succeed()

    with switch_interval(cfg.gil.switch_interval_ms):
        noise_before = measure_noise_floor(workers=cfg.connector.workers)
        env = HybridEnvironment(stall_timeout_s=cfg.limits.request_timeout_s + 5.0)
        pool = WorkerPool(env, cfg.connector.workers)
        store = StoreModel(env, cfg.store)
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
        all_done = env.event()
        with pool:
            try:
                for addon in addons:
                    addon.attach(env)  # may run a baseline first (engine alone): not timed
                t0 = time.perf_counter()
                _drive(env, pipeline, workload)
                env.run(until=all_done)
            finally:
                for addon in reversed(addons):
                    addon.detach()
        elapsed = time.perf_counter() - t0
        noise_after = measure_noise_floor(workers=cfg.connector.workers)
    records.sort(key=lambda r: r.request_id)
    summary = summarize_requests(records, elapsed, cfg.output.percentiles)
    summary.update(noise_floor_summary(noise_before, noise_after))
    summary.update(workload.stats)
    tables: dict[str, list[dict[str, Any]]] = {}
    for addon in addons:
        summary.update(addon.summary())
        for stem, rows in addon.tables().items():
            tables.setdefault(stem, []).extend(rows)
    return PointResult(point, repeat, records, summary, tables)
