"""How far model mode is from real mode, point by point, on a run that holds both.

``kvsim validate-model`` runs a config's grid in real mode and in model mode
(two run directories); this module pairs each real point with its model twin
(same values of every other axis) and reports the model's relative error on
latency p50 and p99, GIL wait (mean and p99) and the probe's stall p99, with a
bootstrap interval on the real side (sim.analysis.bootstrap) so that an error can
be read against the real measurement's own noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.analysis.bootstrap import Interval, stat_interval, statistic
from sim.rundir.reader import RunResults, as_float, column

__all__ = [
    "METRICS",
    "TARGETS",
    "ValidationRow",
    "axis_key",
    "speed_scales",
    "summary_counts",
    "validate_runs",
]

#: (name, table column or summary column, statistic, from per-request rows?)
METRICS: tuple[tuple[str, str, str, bool], ...] = (
    ("latency_p50_ms", "latency_ms", "p50", True),
    ("latency_p99_ms", "latency_ms", "p99", True),
    ("gil_wait_mean_ms", "gil_wait_ms", "mean", True),
    ("gil_wait_p99_ms", "gil_wait_ms", "p99", True),
    ("stall_p99_ms", "stall_p99_ms", "mean", False),
)

#: Relative error the issue sets as the target, per metric (others are reported only).
TARGETS: dict[str, float] = {"latency_p50_ms": 0.10, "latency_p99_ms": 0.15}


@dataclass(frozen=True)
class ValidationRow:
    #: The point's other axes (everything but mode).
    key: dict[str, str]
    real: dict[str, Interval]
    model: dict[str, float]

    def error(self, metric: str) -> float:
        r, m = self.real[metric].value, self.model[metric]
        if math.isnan(r) or math.isnan(m) or r == 0:
            return math.nan
        return (m - r) / r

    def within(self, metric: str) -> bool | None:
        target = TARGETS.get(metric)
        err = self.error(metric)
        if target is None or math.isnan(err):
            return None
        return abs(err) <= target

    def in_interval(self, metric: str) -> bool | None:
        iv, m = self.real[metric], self.model[metric]
        if math.isnan(iv.low) or math.isnan(m):
            return None
        return iv.low <= m <= iv.high


def _key(row: dict[str, Any], axes: list[str]) -> tuple[str, ...]:
    return tuple(str(row.get(a, "")) for a in axes)


def validate_runs(
    real: RunResults, model: RunResults, n_boot: int = 2000, seed: int = 0
) -> list[ValidationRow]:
    """One row per point of ``real`` that ``model`` has too (same values of every axis
    but mode), in the real run's point order."""
    axes = [a for a in real.axes if a != "mode"]
    missing = [a for a in axes if a not in model.axes]
    if missing:
        raise ValueError(f"{model.dir}: has no axis {missing[0]!r} of {real.dir}")
    ok = {"real": {}, "model": {}}  # type: dict[str, dict[tuple[str, ...], list[dict]]]
    for side, res in (("real", real), ("model", model)):
        for r in res.table("requests"):
            if r.get("status") == "ok":
                ok[side].setdefault(_key(r, axes), []).append(r)
    summaries = {
        side: {_key(r, axes): r for r in res.summary}
        for side, res in (("real", real), ("model", model))
    }
    out = []
    for key in dict.fromkeys(_key(r, axes) for r in real.summary):
        real_rows, model_rows = ok["real"].get(key, []), ok["model"].get(key, [])
        if not real_rows or not model_rows:
            continue
        got_real: dict[str, Interval] = {}
        got_model: dict[str, float] = {}
        for name, col, stat, per_row in METRICS:
            if per_row:
                got_real[name] = stat_interval([column(real_rows, col)], stat, n_boot, seed)
                mv = column(model_rows, col)
                mv = mv[~np.isnan(mv)]
                got_model[name] = float(statistic(mv, stat)) if mv.size else math.nan
            else:
                rv = as_float(summaries["real"].get(key, {}).get(col))
                got_real[name] = Interval(rv, math.nan, math.nan)
                got_model[name] = as_float(summaries["model"].get(key, {}).get(col))
        out.append(ValidationRow(dict(zip(axes, key, strict=True)), got_real, got_model))
    return out


def summary_counts(rows: list[ValidationRow]) -> dict[str, Any]:
    """How many points meet each target, and the worst error of each metric."""
    out: dict[str, Any] = {"points": len(rows)}
    for name, *_ in METRICS:
        errs = [abs(e) for r in rows if not math.isnan(e := r.error(name))]
        out[f"{name}_worst"] = max(errs) if errs else math.nan
        out[f"{name}_median"] = float(np.median(errs)) if errs else math.nan
        if name in TARGETS:
            out[f"{name}_met"] = sum(bool(r.within(name)) for r in rows)
    return out


def _norm(value: Any) -> str:
    """One axis value as a key part."""
    try:
        return repr(float(value))
    except (TypeError, ValueError):
        return str(value)


def axis_key(values: Iterable[Any]) -> tuple[str, ...]:
    """Axis values as a key: ``2``, ``"2"`` and ``2.0`` are one value (a CSV has ``2``)."""
    return tuple(_norm(v) for v in values)


def speed_scales(real: RunResults, model: RunResults) -> dict[tuple[str, ...], float]:
    """Per point (its axis values but mode): the real twin's mean GIL hold per request
    over the model's. The machine's speed drifts: the same real point's mean hold read
    23–33 ms within half an hour here. Given this as ``machine.cpu_scale``, the model
    runs at the speed the real point met, and what is left of its error is the GIL and
    the cores it simulates, not the calibration's moment."""
    axes = [a for a in real.axes if a != "mode"]

    def holds(res: RunResults) -> dict[tuple[str, ...], float]:
        return {
            axis_key(r.get(a) for a in axes): as_float(r.get("gil_hold_mean_ms"))
            for r in res.summary
        }

    got_real, got_model = holds(real), holds(model)
    out = {}
    for key, r in got_real.items():
        m = got_model.get(key, math.nan)
        if r > 0 and m > 0:
            out[key] = r / m
    return out
