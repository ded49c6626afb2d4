"""Model-mode add-ons: the sentinel probe and the engine step loop as simulated threads.

They contribute the same summary columns (and ``steps.csv``) as their real-mode
counterparts (sim.instruments.probe, sim.instruments.engine), computed the same
way from simulated timestamps. Columns that only a real machine can give (the
probe's off-core share, the cores' run-queue wait) are left empty (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any

import simpy

from sim.config import EngineConfig, GilConfig
from sim.instruments.engine import STEP_COLUMNS, summarize_steps
from sim.instruments.probe import busy_fraction
from sim.model.costs import ModelCosts
from sim.model.gil import CPythonGil, NoGil
from sim.model.threads import Harness
from sim.runtime.metrics import percentiles

__all__ = ["ModelEngine", "ModelProbe"]

PROBE_THREAD = "kvsim-probe"
ENGINE_THREAD = "kvsim-engine"


class ModelProbe:
    """A thread that wants to run at jittered targets (±50 %) and records how late it runs."""

    def __init__(
        self, cfg: GilConfig, costs: ModelCosts, gil: CPythonGil | NoGil, draw: Callable[[], float]
    ) -> None:
        self._interval_s = cfg.probe_interval_ms / 1e3
        self._tau_s = cfg.probe_threshold_ms / 1e3
        self._costs = costs
        self._gil = gil
        self._draw = draw
        self._wakes: list[float] = []
        self._targets: list[float] = []
        self._stopped = False
        self._t0 = self._t1 = 0.0
        self._env: simpy.Environment | None = None

    def attach(self, env: simpy.Environment) -> None:
        self._env = env
        self._t0 = env.now
        env.process(self._loop(env))

    def detach(self) -> None:
        self._stopped = True
        assert self._env is not None
        self._t1 = self._env.now

    def _gap(self) -> float:
        return self._interval_s * (0.5 + self._draw())

    def _loop(self, env: simpy.Environment) -> Generator[Any, Any, None]:
        gil, c = self._gil, self._costs
        wakes, targets = self._wakes, self._targets
        target = env.now + self._gap()
        draw_late = c.probe_late
        while not self._stopped:
            delay = target - env.now
            late = draw_late()
            if delay > 0:
                yield env.timeout(delay + late)
            if gil.holder is None and not gil.waiting:
                # Free GIL: the probe runs at once. Until the next scheduled event nothing
                # changes, so every target before it is served the same way: record those
                # without a SimPy event each (exact; the probe's own microseconds of hold
                # are left out on this path).
                late = max(0.0, env.now - target)
                wakes.append(late)
                targets.append(late)
                horizon = env.peek()
                target += self._gap()
                while target + (late := draw_late()) < horizon:
                    wakes.append(late)
                    targets.append(late)
                    target += self._gap()
                continue
            yield from gil.acquire(PROBE_THREAD)
            now = env.now
            wakes.append(now - target)
            targets.append(now - target)
            target += self._gap()
            while target <= now:
                targets.append(now - target)
                target += self._gap()
            if c.probe_hold_s > 0:
                yield from gil.run(PROBE_THREAD, c.probe_hold_s)
            gil.release(PROBE_THREAD)

    def summary(self, elapsed_s: float, hold_ms: float, harness: Harness) -> dict[str, float]:
        nan = math.nan
        stall = [w * 1e3 for w in self._wakes]
        s50, s99 = percentiles(stall, [50, 99])
        probe = busy_fraction([round(t * 1e9) for t in self._targets], round(self._tau_s * 1e9))
        window = self._t1 - self._t0
        requests = hold_ms / 1e3 / window if window > 0 else nan
        sim_busy = harness.cpu_s / window if window > 0 else nan
        accounted = requests + sim_busy
        return {
            "stall_p50_ms": s50,
            "stall_p99_ms": s99,
            "stall_max_ms": max(stall) if stall else nan,
            "gil_busy_probe": probe,
            "gil_busy_probe_core": nan,
            "gil_busy_requests": requests,
            "gil_busy_harness": sim_busy,
            "gil_busy_engine": nan,
            "gil_busy_agreement": probe / accounted if accounted > 0 else nan,
            "core_wait_frac": nan,
        }

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {}


class ModelEngine:
    """The engine loop: post a step, wake, build (holding the GIL), forward (GIL-free)."""

    def __init__(
        self, cfg: EngineConfig, costs: ModelCosts, gil: CPythonGil | NoGil, harness: Harness
    ) -> None:
        if costs.engine_build_s is None:
            raise ValueError("engine build hold not calibrated")
        self._cfg = cfg
        self._costs = costs
        self._gil = gil
        self._harness = harness
        self._rows: list[dict[str, Any]] = []
        self._stopped = False

    def attach(self, env: simpy.Environment) -> None:
        baseline = env.process(self._steps(env, "alone", self._cfg.baseline_steps))
        env.run(until=baseline)
        env.process(self._steps(env, "load", None))

    def detach(self) -> None:
        self._stopped = True

    def _steps(self, env: simpy.Environment, phase: str, count: int | None):
        cfg, c, gil = self._cfg, self._costs, self._gil
        forward_s = cfg.forward_ms / 1e3
        meta = sum(cfg.query_lens())
        done = 0
        while (count is None or done < count) and not self._stopped:
            posted = env.now
            yield env.timeout(c.wake())
            yield from gil.acquire(ENGINE_THREAD)
            started = env.now
            yield from gil.run(ENGINE_THREAD, c.engine_build_s or 0.0)
            built = env.now
            gil.release(ENGINE_THREAD)
            before = env.now
            yield env.timeout(forward_s + c.sleep_late())
            yield from gil.acquire(ENGINE_THREAD)
            resumed = env.now
            ended = env.now
            gil.release(ENGINE_THREAD)  # back to its command queue; the sim thread takes the row
            yield self._harness.post(c.complete_s, c.wake)
            wake = started - posted
            resume = max(0.0, resumed - before - forward_s)
            self._rows.append(
                {
                    "step": len(self._rows),
                    "phase": phase,
                    "start_s": posted,
                    "batch_size": cfg.batch_size,
                    "tokens": meta,
                    "padded_tokens": cfg.max_tokens(),
                    "build_us": (built - started) * 1e6,
                    "forward_ms": cfg.forward_ms,
                    "step_ms": (ended - posted) * 1e3,
                    "stall_ms": (wake + resume) * 1e3,
                    "wake_ms": wake * 1e3,
                    "resume_ms": resume * 1e3,
                }
            )
            done += 1
            if cfg.idle_ms:
                yield env.timeout(cfg.idle_ms / 1e3)

    def summary(self, elapsed_s: float, hold_ms: float, harness: Harness) -> dict[str, float]:
        return summarize_steps(self._rows)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {"steps": [{k: r[k] for k in STEP_COLUMNS} for r in self._rows]}
