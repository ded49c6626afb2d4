"""The engine step's part of ``kvsim calibrate``: its build hold per index variant.

Kept apart from the load's measurements (sim.calibration.measure) because it needs the
engine's own code (torch, the index variants) and times one call, the build the
real engine thread runs (sim.instruments.engine.build_step), where the rest times
requests through the connector's CPU stages.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from connectors import registry
from sim.calibration.measure_yields import Waiter, timed
from sim.config import EngineConfig

__all__ = ["ENGINE_BATCH_SIZES", "measure_engine"]

#: Decode batch sizes the engine's build is measured at (padded tokens, default padding).
ENGINE_BATCH_SIZES = (8, 32, 256, 1024)


def measure_engine(
    reps: int = 50, batch_sizes: Sequence[int] = ENGINE_BATCH_SIZES
) -> dict[str, dict[str, Any]]:
    """Build hold (thread CPU ms, the mean) of one engine step per index variant, at the
    default engine settings and at each decode batch size, keyed by the step's padded
    tokens (the model interpolates between them: sim.model.calibration).

    As in a run: each build comes after a forward's GIL-free sleep (cold caches, as the
    load requests after 20 ms asleep), and the mean keeps the collections a build sets
    off now and then. It times the real engine's own build (sim.instruments.engine)."""
    from connectors.token_index import MetadataFactory  # not with `kvsim calibrate --help`
    from sim.instruments.engine import build_step  # not with `kvsim calibrate --help`

    default = EngineConfig(device="cpu")
    out: dict[str, dict[str, Any]] = {}
    for name in registry.index_variant_names():
        by_tokens: dict[str, float] = {}
        yields: dict[str, Any] = {}
        for size in sorted({*batch_sizes, default.batch_size}):
            cfg = default.model_copy(update={"batch_size": size})
            try:
                variant = registry.get_index_variant(name)(cfg.components, cfg.max_tokens(), "cpu")
                variant.warm_up()
            except Exception:  # a variant this machine cannot run (a device-only one)
                break
            factory = MetadataFactory(size, cfg.max_tokens(), variant.device, cfg.pad_multiple)
            lens = cfg.query_lens()
            build_step(factory, variant, lens)  # first-call set-up
            holds = []
            for _ in range(reps):
                time.sleep(cfg.forward_ms / 1e3)
                c0 = time.thread_time_ns()
                build_step(factory, variant, lens)
                holds.append((time.thread_time_ns() - c0) / 1e6)
            by_tokens[str(cfg.max_tokens())] = statistics.fmean(holds)
            if size == default.batch_size:
                yields = _build_yields(factory, variant, lens, cfg.forward_ms / 1e3, reps)
        else:
            out[name] = {
                "yields": yields,
                "build_ms": by_tokens[str(default.max_tokens())],
                "by_tokens": by_tokens,
                "components": default.components,
                "pad_multiple": default.pad_multiple,
            }
    return out


def _build_yields(
    factory: Any, variant: Any, lens: Any, forward_s: float, reps: int
) -> dict[str, Any]:
    """Takes of a waiting thread in mid-build (sim.calibration.measure_yields): torch
    releases the GIL inside its operators, as NumPy does inside its ufuncs (6 Dec 2026,
    quickstart's engine: 1.0 a step cached, 0.7 device, 2.9 per_component)."""
    from sim.instruments.engine import build_step  # not with `kvsim calibrate --help`

    spans = []
    with Waiter() as waiter:
        for _ in range(reps):
            time.sleep(forward_s)
            spans.append(timed(build_step, factory, variant, lens)[0])
    return waiter.summary(spans)
