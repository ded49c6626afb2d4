"""What a run directory already holds of a sweep: each point run's state, read only.

``kvsim run --dry-run`` prints it, ``--resume`` runs what is not done, and a run of a
different config is refused before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.config.experiment import ExperimentConfig, Point
from sim.rundir.guard import RunDirError
from sim.rundir.layout import RepRun, rep_runs, verify_rep
from sim.rundir.manifest import read_manifest
from sim.sweep.identity import config_hash, config_identity, first_difference

__all__ = ["PlannedRun", "SweepPlan", "axis_columns", "check_resumable", "plan_sweep"]


def axis_columns(points: Sequence[Point]) -> list[str]:
    cols: list[str] = []
    for p in points:
        for k in p.axes:
            if k not in cols:
                cols.append(k)
    return cols


@dataclass(frozen=True)
class PlannedRun:
    """A point run and what the run directory already says about it."""

    rep: RepRun
    #: "done" (finished and verified), "failed", "interrupted", "damaged" (finished, but
    #: a file it wrote is missing or changed: the error says which) or "pending".
    state: str
    error: str = ""


@dataclass(frozen=True)
class SweepPlan:
    runs: list[PlannedRun]
    #: The run directory already holds a kvsim run.
    existing: bool
    #: Where the existing run's config differs from this one ("" when it is the same).
    difference: str

    @property
    def pending(self) -> list[PlannedRun]:
        return [r for r in self.runs if r.state != "done"]


def _difference(cfg: ExperimentConfig, manifest: dict[str, Any]) -> str:
    if manifest.get("config_hash") == config_hash(cfg):
        return ""
    old = manifest.get("config")
    if not isinstance(old, dict) or "config_hash" not in manifest:
        return "the run records no config hash (made by an older kvsim)"
    return first_difference(old, config_identity(cfg)) or "resolved config hash differs"


def plan_sweep(cfg: ExperimentConfig, points: Sequence[Point], out_dir: Path) -> SweepPlan:
    """Every point run and its state in ``out_dir``; reads only, never writes."""
    manifest = read_manifest(out_dir)
    difference = _difference(cfg, manifest) if manifest is not None else ""
    runs = []
    for rep in rep_runs(out_dir, list(points), cfg.repeats):
        if manifest is None or difference:
            runs.append(PlannedRun(rep, "pending"))
        else:
            state, why = verify_rep(rep.dir)
            runs.append(PlannedRun(rep, state, why))
    return SweepPlan(runs, manifest is not None, difference)


def check_resumable(cfg: ExperimentConfig, out_dir: Path) -> None:
    """Raise RunDirError when ``out_dir`` holds a run of a different experiment."""
    manifest = read_manifest(out_dir)
    if manifest is None:
        return
    diff = _difference(cfg, manifest)
    if diff:
        raise RunDirError(
            f"{out_dir}: cannot resume, the config changed since this run started ({diff}); "
            "restore it, or pass --force to start over"
        )
