"""Which calibration a model point uses, and whether it covers the point (else one line).

Checked for every point before a run starts (``kvsim run``, ``kvsim validate-model``),
so an uncovered point fails the command up front instead of failing mid-sweep.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sim.config import ExperimentConfig, Point
from sim.model.calibration import Calibration, CalibrationError, load_calibration

__all__ = ["check_point", "check_points", "chunk_range", "point_calibration"]


def point_calibration(
    cfg: ExperimentConfig, memo: dict[str, Calibration] | None = None
) -> Calibration:
    key = str(Path(cfg.machine.calibration))
    if memo is not None and key in memo:
        return memo[key]
    cal = load_calibration(key)
    if memo is not None:
        memo[key] = cal
    return cal


def chunk_range(cfg: ExperimentConfig, tokens: Sequence[int] | None = None) -> range | None:
    """Chunks per group the point's requests have: from the planned ``tokens`` when given,
    else from a fixed or uniform token spec; None when only the plan can tell."""
    from sim.config.workload import FixedTokens, TraceArrival, UniformTokens

    bs = cfg.model.block_size
    gran = cfg.model.chunk_granularity
    spec = cfg.workload.tokens
    if tokens is not None:
        if not tokens:
            return None
        lo, hi = min(tokens), max(tokens)
    elif isinstance(cfg.workload.arrival, TraceArrival):
        return None
    elif isinstance(spec, FixedTokens):
        lo = hi = spec.value
    elif isinstance(spec, UniformTokens):
        lo, hi = spec.low, spec.high
    else:  # lognormal, empirical: known once drawn
        return None
    lo = max(gran, lo // gran * gran)
    hi = max(gran, hi // gran * gran)
    return range(-(-lo // bs), -(-hi // bs) + 1)


def check_point(
    cfg: ExperimentConfig, cal: Calibration, tokens: Sequence[int] | None = None
) -> None:
    """CalibrationError unless ``cal`` covers the variant, geometry and engine of ``cfg``
    (and the planned ``tokens``, when given)."""
    cal.check_covers(
        cfg.connector.variant,
        cfg.connector.handler,
        chunk_range(cfg, tokens),
        cfg.model.regions,
        cfg.model.kv_groups,
    )
    if cfg.engine.enabled and cal.engine_build_ms(cfg.engine.index_variant) is None:
        raise CalibrationError(
            f"{cal.path}: engine.index_variant {cfg.engine.index_variant!r} is not calibrated; "
            "run `kvsim calibrate` with the engine"
        )


def check_points(points: Sequence[Point]) -> dict[str, Calibration]:
    """Check every model-mode point; returns the calibrations used, by path."""
    memo: dict[str, Calibration] = {}
    for p in points:
        if p.config.mode == "model":
            check_point(p.config, point_calibration(p.config, memo))
    return memo
