"""Fit the modelled store to a real one: latency and bandwidth from a real run's gets.

The modelled store charges ``latency_ms + bytes / bandwidth`` per transfer. A run
with ``store.kind: mooncake`` records, per request, the bytes its get moved and
the get's wall time, measured in the load thread (requests.csv ``transfer_bytes``
and ``transfer_ms``). A least-squares line through those points over the
requests of the least contended real-store points (fewest load threads, unless
told otherwise) gives the two parameters; the fit's R² and relative errors say
how well a straight line describes the store. Contention between concurrent
gets is left to the model's own rules (``concurrency``), which is what the
real-vs-model study measures.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim import columns
from sim.config.sections import StoreConfig
from sim.rundir.guard import RunDirError
from sim.rundir.reader import as_float, column, load_results

__all__ = ["StoreFit", "bandwidth_field", "fit_store"]


def bandwidth_field() -> str:
    """The modelled store's bandwidth setting (GB/s), by name as the config defines it."""
    names = [n for n in StoreConfig.model_fields if n.startswith("bandwidth")]
    return names[0] if names else "bandwidth_gb_per_s"


@dataclass(frozen=True)
class StoreFit:
    latency_ms: float
    bandwidth_gb_per_s: float
    requests: int
    points: list[str]
    workers: int
    r2: float
    #: |fit - measured| / measured over the fitted requests.
    rel_err_p50: float
    rel_err_p99: float
    bytes_min: int
    bytes_max: int
    #: True when the free intercept came out negative and the line was forced through 0.
    through_origin: bool

    def settings(self) -> dict[str, Any]:
        """The modelled store's settings this fit gives, as a config's ``store`` section."""
        return {
            "kind": "model",
            columns.LATENCY_MS.name: round(self.latency_ms, 4),
            bandwidth_field(): round(self.bandwidth_gb_per_s, 4),
        }

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "settings": self.settings()}


def fit_store(run_dir: str | Path, workers: int | None = None) -> StoreFit:
    """Fit from the real-store points of a run (RunDirError, one line, when it cannot)."""
    run = load_results(run_dir)
    real = [r for r in run.summary if r.get(columns.STORE_KIND.name) == "mooncake"]
    if not real:
        raise RunDirError(f"{run.dir}: no finished point ran with store.kind: mooncake")
    all_workers = sorted({int(as_float(r.get("workers"))) for r in real})
    chosen = all_workers[0] if workers is None else workers
    if chosen not in all_workers:
        raise RunDirError(
            f"{run.dir}: no real-store point ran with {chosen} workers "
            f"(there are: {', '.join(map(str, all_workers))})"
        )
    picked = [r for r in real if int(as_float(r.get("workers"))) == chosen]
    keys = {run.key(r) for r in picked}
    rows = [
        r
        for r in run.table("requests")
        if run.key(r) in keys
        and r.get("status") == "ok"
        and as_float(r.get(columns.TRANSFER_BYTES.name)) > 0
    ]
    nbytes = column(rows, columns.TRANSFER_BYTES.name)
    ms = column(rows, columns.TRANSFER_MS.name)
    good = np.isfinite(nbytes) & np.isfinite(ms) & (ms > 0)
    nbytes, ms = nbytes[good], ms[good]
    if len(np.unique(nbytes)) < 2:
        raise RunDirError(
            f"{run.dir}: the real-store requests moved {len(np.unique(nbytes))} distinct "
            "size(s); a latency and a bandwidth need at least two (use workload.tokens with "
            "dist: uniform)"
        )
    slope, intercept = np.polyfit(nbytes, ms, 1)
    through_origin = bool(intercept < 0)
    if through_origin:
        slope, intercept = float(np.dot(nbytes, ms) / np.dot(nbytes, nbytes)), 0.0
    if slope <= 0:
        raise RunDirError(
            f"{run.dir}: the get time does not grow with the bytes moved; no bandwidth fits"
        )
    pred = intercept + slope * nbytes
    ss_res = float(((ms - pred) ** 2).sum())
    ss_tot = float(((ms - ms.mean()) ** 2).sum())
    rel = np.abs(pred - ms) / ms
    return StoreFit(
        latency_ms=float(intercept),
        bandwidth_gb_per_s=float(1.0 / slope * 1e3 / 1e9),  # bytes per ms -> GB/s
        requests=len(ms),
        points=sorted(",".join(k) for k in keys),
        workers=chosen,
        r2=1.0 - ss_res / ss_tot if ss_tot > 0 else math.nan,
        rel_err_p50=float(np.percentile(rel, 50)),
        rel_err_p99=float(np.percentile(rel, 99)),
        bytes_min=int(nbytes.min()),
        bytes_max=int(nbytes.max()),
        through_origin=through_origin,
    )
