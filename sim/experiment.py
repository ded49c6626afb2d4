"""Run every point of an experiment and write requests.csv, summary.csv, manifest.json."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .config import ExperimentConfig, Point
from .manifest import MANIFEST_TOOL, machine_info
from .metrics import SUMMARY_METRICS
from .outputs import write_csv, write_json
from .point import PointResult, run_point
from .records import REQUEST_COLUMNS

__all__ = ["ExperimentResult", "axis_columns", "run_experiment"]


class ExperimentResult:
    def __init__(self, out_dir: Path, rows: list[dict[str, Any]], axes: list[str]) -> None:
        self.out_dir = out_dir
        self.summary_rows = rows
        self.axes = axes

    @property
    def failed_points(self) -> list[dict[str, Any]]:
        return [r for r in self.summary_rows if r["ok"] == 0]


def axis_columns(points: Sequence[Point]) -> list[str]:
    cols: list[str] = []
    for p in points:
        for k in p.axes:
            if k not in cols:
                cols.append(k)
    return cols


def _columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    cols: dict[str, None] = {}
    for row in rows:
        cols.update(dict.fromkeys(row))
    return list(cols)


def _manifest(
    cfg: ExperimentConfig, config_path: Path, points: Sequence[Point], status: str, started: float
) -> dict[str, Any]:
    return {
        "tool": MANIFEST_TOOL,
        "status": status,
        "config_path": str(config_path),
        "config": cfg.model_dump(mode="json"),
        "seed": cfg.seed,
        "switch_interval_ms": cfg.gil.switch_interval_ms,
        "points": [{"index": p.index, "slug": p.slug, "axes": p.axes} for p in points],
        "started_unix": started,
        "elapsed_s": time.time() - started,
        "machine": machine_info(),
    }


def run_experiment(
    cfg: ExperimentConfig,
    points: Sequence[Point],
    config_path: Path,
    out_dir: Path,
    on_point_start: Callable[[Point, int], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExperimentResult:
    """Run points in order; the caller has prepared ``out_dir`` (see rundir)."""
    started = time.time()
    write_json(out_dir / "manifest.json", _manifest(cfg, config_path, points, "running", started))
    axes = axis_columns(points)
    summary_rows: list[dict[str, Any]] = []
    request_rows: list[dict[str, Any]] = []
    extra: dict[str, list[dict[str, Any]]] = {}
    results: list[PointResult] = []
    for point in points:
        for rep in range(cfg.repeats):
            if on_point_start is not None:
                on_point_start(point, rep)
            res = run_point(point, rep, progress)
            results.append(res)
            base = {**{a: point.axes.get(a, "") for a in axes}, "repeat": rep}
            summary_rows.append({**base, **res.summary})
            request_rows.extend({**base, **r.as_row()} for r in res.records)
            write_csv(out_dir / "requests.csv", [*axes, "repeat", *REQUEST_COLUMNS], request_rows)
            write_csv(out_dir / "summary.csv", [*axes, "repeat", *SUMMARY_METRICS], summary_rows)
            for stem, rows in res.tables.items():
                extra.setdefault(stem, []).extend({**base, **row} for row in rows)
                cols = [*axes, "repeat", *_columns(rows)]
                write_csv(out_dir / f"{stem}.csv", cols, extra[stem])
    write_json(out_dir / "manifest.json", _manifest(cfg, config_path, points, "complete", started))
    return ExperimentResult(out_dir, summary_rows, axes)
