"""``results.json``: the run's points and metadata in one file that scripts read.

One object per point, with its axis values (typed as in the config), its status,
how many repeats it aggregates, and its metrics under the summary.csv names,
which carry their units (``latency_p99_ms``, ``throughput_rps``, ``elapsed_s``;
counts and fractions have none). Beside the points: the run's metadata — the
resolved config and its hash, the machine, package versions and the git commit
— so that a result read years later still says what produced it.

It is rewritten (atomically) with ``manifest.json`` after every point run, so an
interrupted run's ``results.json`` holds the points that finished and says
``"status": "interrupted"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sim import columns
from sim.rundir.layout import RESULTS_FILE
from sim.rundir.outputs import write_json

__all__ = ["RESULTS_FILE", "RESULTS_FORMAT", "results_document", "write_results_json"]

RESULTS_FORMAT = "kvsim-results/1"

#: Summary columns that count things: integers in the JSON.
_COUNTS = frozenset({"requests", "ok", "failed", "repeats", columns.ENGINE_STEPS.name})
#: Summary columns that are not metrics of the point.
_NOT_METRICS = frozenset({"repeats", "status", "error", "errors", "repeat"})


def _value(v: Any) -> float | int | str | None:
    """A CSV cell or an aggregate as JSON: numbers as numbers, NaN and empty as null."""
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        return int(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    return None if math.isnan(x) or math.isinf(x) else x


def _point(row: dict[str, Any], axes: Sequence[str], meta: dict[str, Any]) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    spread: dict[str, Any] = {}
    for col, raw in row.items():
        if col in axes or col in _NOT_METRICS:
            continue
        v = _value(raw)
        if isinstance(v, str):
            continue
        if isinstance(v, float) and col in _COUNTS and v.is_integer():
            v = int(v)
        (spread if col.endswith("_std") else metrics)[col.removesuffix("_std")] = v
    repeats = _value(row.get("repeats"))
    return {
        "index": meta.get("index"),
        "label": meta.get("label"),
        "axes": {a: meta.get("axes", {}).get(a, row.get(a)) for a in axes},
        "status": row.get("status", "ok"),
        "error": row.get("error") or None,
        "repeats": int(repeats) if isinstance(repeats, float) else repeats,
        "errors_by_kind": row.get("errors") or None,
        "metrics": metrics,
        "metrics_std": spread,
    }


def results_document(
    manifest: dict[str, Any], summary_rows: Sequence[dict[str, Any]], axes: Sequence[str]
) -> dict[str, Any]:
    """The whole results.json as a dict (see the module docstring)."""
    planned = manifest.get("points") or []
    by_axes = {
        tuple(str(p.get("axes", {}).get(a, "")) for a in axes): p
        for p in planned
        if isinstance(p, dict)
    }
    points = []
    for row in summary_rows:
        meta = by_axes.get(tuple(str(row.get(a, "")) for a in axes), {})
        points.append(_point(row, axes, meta))
    machine = dict(manifest.get("machine") or {})
    versions = dict(machine.pop("packages", None) or {})
    versions["python"] = machine.get("python")
    cfg = manifest.get("config") if isinstance(manifest.get("config"), dict) else {}
    return {
        "format": RESULTS_FORMAT,
        "name": cfg.get("name"),
        "status": manifest.get("status"),
        "axes": list(axes),
        "points": points,
        "metadata": {
            "config": cfg,
            "config_hash": manifest.get("config_hash"),
            "config_path": manifest.get("config_path"),
            "overrides": manifest.get("overrides", []),
            "seed": manifest.get("seed"),
            "repeats": manifest.get("repeats"),
            "planned_points": len(planned),
            "runs": manifest.get("runs"),
            "started_unix": manifest.get("started_unix"),
            columns.ELAPSED_S.name: manifest.get(columns.ELAPSED_S.name),
            "commit": machine.get("git_commit"),
            "versions": versions,
            "machine": machine,
        },
    }


def write_results_json(
    out_dir: Path,
    manifest: dict[str, Any],
    summary_rows: Sequence[dict[str, Any]],
    axes: Sequence[str],
) -> Path:
    path = out_dir / RESULTS_FILE
    write_json(path, results_document(manifest, summary_rows, axes))
    return path
