"""How far model mode is from real mode, point by point, on a run that holds both.

``kvsim validate-model`` runs a config's grid with ``mode`` swept over real and
model into one run directory; this module pairs each real point with its model
twin (same values of every other axis) and reports the model's relative error on
latency p50 and p99, GIL wait (mean and p99) and the probe's stall p99, with a
bootstrap interval on the real side (sim.analysis.bootstrap) so that an error can
be read against the real measurement's own noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.analysis.bootstrap import Interval, stat_interval, statistic
from sim.rundir.reader import RunResults, as_float, column

__all__ = ["METRICS", "TARGETS", "ValidationRow", "summary_counts", "validate_run"]

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


def _rows_of(res: RunResults, axes: list[str], key: tuple[str, ...], mode: str) -> list[dict]:
    want = dict(zip(axes, key, strict=True))
    want["mode"] = mode
    return [
        r
        for r in res.table("requests")
        if r.get("status") == "ok" and all(str(r.get(a, "")) == v for a, v in want.items())
    ]


def _summary_of(res: RunResults, axes: list[str], key: tuple[str, ...], mode: str) -> dict:
    want = dict(zip(axes, key, strict=True))
    want["mode"] = mode
    for r in res.summary:
        if all(str(r.get(a, "")) == v for a, v in want.items()):
            return r
    return {}


def validate_run(res: RunResults, n_boot: int = 2000, seed: int = 0) -> list[ValidationRow]:
    """One row per pair of points (real, model) that differ only in mode."""
    if "mode" not in res.axes:
        raise ValueError(f"{res.dir}: the run has no mode axis; run it with both modes")
    axes = [a for a in res.axes if a != "mode"]
    keys = list(dict.fromkeys(res.key(r, axes) for r in res.summary))
    out = []
    for key in keys:
        real_rows = _rows_of(res, axes, key, "real")
        model_rows = _rows_of(res, axes, key, "model")
        if not real_rows or not model_rows:
            continue
        real: dict[str, Interval] = {}
        model: dict[str, float] = {}
        for name, col, stat, per_row in METRICS:
            if per_row:
                values = column(real_rows, col)
                real[name] = stat_interval([values], stat, n_boot, seed)
                mv = column(model_rows, col)
                mv = mv[~np.isnan(mv)]
                model[name] = float(statistic(mv, stat)) if mv.size else math.nan
            else:
                rv = as_float(_summary_of(res, axes, key, "real").get(col))
                real[name] = Interval(rv, math.nan, math.nan)
                model[name] = as_float(_summary_of(res, axes, key, "model").get(col))
        out.append(ValidationRow(dict(zip(axes, key, strict=True)), real, model))
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
