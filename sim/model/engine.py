"""Model-mode engine step loop: post a step, wake, build (holding the GIL), forward (GIL-free).

It contributes the same summary columns and ``steps.csv`` as its real-mode
counterpart (sim.instruments.engine), computed the same way from simulated
timestamps. A state machine on :class:`sim.model.loop.Loop` (no SimPy): each
step of the real engine thread is one method, each wait names the next.
"""

from __future__ import annotations

from typing import Any

from sim import columns
from sim.config import EngineConfig
from sim.instruments.engine import STEP_COLUMNS, summarize_steps
from sim.model.costs import ModelCosts
from sim.model.gil import SimGil
from sim.model.loop import Loop
from sim.model.threads import Harness, HeldParts

__all__ = ["ENGINE_THREAD", "ModelEngine"]

ENGINE_THREAD = "kvsim-engine"


class ModelEngine:
    """The engine loop: ``baseline_steps`` steps alone (run at attach), then steps under load."""

    def __init__(self, cfg: EngineConfig, costs: ModelCosts, gil: SimGil, harness: Harness) -> None:
        if costs.engine_build_s is None:
            raise ValueError("engine build hold not calibrated")
        self._cfg = cfg
        self._costs = costs
        self._gil = gil
        self._harness = harness
        self._parts = HeldParts(gil, ENGINE_THREAD)
        self._rows: list[dict[str, Any]] = []
        self._stopped = False
        self._loop: Loop | None = None
        self._phase = "alone"
        self._count: int | None = None
        self._done = 0
        self._forward_s = cfg.forward_ms / 1e3
        self._meta = sum(cfg.query_lens())
        self._t: dict[str, float] = {}
        #: Run time zero of the rows' ``start_s``: the loop's start for the baseline, the
        #: load's start after it (real mode's rows count from ``set_origin`` alike).
        self._origin = 0.0

    def attach(self, loop: Loop) -> None:
        """Run the baseline steps (nothing else is going on yet), then start the load phase."""
        self._loop = loop
        self._count = self._cfg.baseline_steps
        if self._count > 0:
            self._begin()
            loop.run()
        self._phase, self._count, self._done = "load", None, 0
        self._origin = loop.now  # the load (and its schedule) starts here: sim.model.driver
        loop.after(0.0, self._begin)

    def detach(self) -> None:
        self._stopped = True

    def _begin(self, _arg: Any = None) -> None:
        assert self._loop is not None
        if self._stopped:
            return
        if self._count is not None and self._done >= self._count:
            self._loop.stop()  # the baseline is done: back to attach()
            return
        self._t["posted"] = self._loop.now
        self._loop.after(self._costs.wake(), self._woken)

    def _woken(self, _arg: Any = None) -> None:
        self._gil.acquire(ENGINE_THREAD, self._build)

    def _build(self, _arg: Any = None) -> None:
        assert self._loop is not None
        self._t["started"] = self._loop.now
        build = self._costs.engine_build_s or 0.0
        if self._costs.engine_yields:  # a waiting thread let in at torch's own releases
            self._parts.run(build, 0.0, self._costs.engine_yields, self._built)
            return
        # Called last in a loop entry (the wake-up, or the GIL's hand-off).
        if self._gil.run_instant(ENGINE_THREAD, build):
            self._built()
        else:
            self._gil.run(ENGINE_THREAD, build, self._built)

    def _built(self, _arg: Any = None) -> None:
        loop = self._loop
        assert loop is not None
        self._t["built"] = self._t["before"] = loop.now
        self._gil.release(ENGINE_THREAD)
        loop.after(self._forward_s + self._costs.sleep_late(), self._forwarded)

    def _forwarded(self, _arg: Any = None) -> None:
        self._gil.acquire(ENGINE_THREAD, self._resumed)

    def _resumed(self, _arg: Any = None) -> None:
        assert self._loop is not None
        self._t["resumed"] = self._t["ended"] = self._loop.now
        self._gil.release(ENGINE_THREAD)  # back to its command queue; the sim thread takes the row
        self._harness.post(self._costs.complete_s, self._costs.wake, self._taken)

    def _taken(self, _arg: Any = None) -> None:
        cfg, t = self._cfg, self._t
        wake = t["started"] - t["posted"]
        resume = max(0.0, t["resumed"] - t["before"] - self._forward_s)
        self._rows.append(
            {
                "step": len(self._rows),
                "phase": self._phase,
                columns.START_S.name: t["posted"] - self._origin,
                "batch_size": cfg.batch_size,
                "tokens": self._meta,
                "padded_tokens": cfg.max_tokens(),
                "build_us": (t["built"] - t["started"]) * 1e6,
                "forward_ms": cfg.forward_ms,
                "step_ms": (t["ended"] - t["posted"]) * 1e3,
                "stall_ms": (wake + resume) * 1e3,
                "wake_ms": wake * 1e3,
                "resume_ms": resume * 1e3,
            }
        )
        self._done += 1
        assert self._loop is not None
        if cfg.idle_ms:
            self._loop.after(cfg.idle_ms / 1e3, self._begin)
        else:
            self._begin()

    def summary(self) -> dict[str, float]:
        return summarize_steps(self._rows)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {"steps": [{k: r[k] for k in STEP_COLUMNS} for r in self._rows]}
