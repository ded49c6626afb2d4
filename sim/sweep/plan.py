"""What a run directory already holds of a sweep: each point run's state, read only.

``kvsim run --dry-run`` prints it, ``--resume`` runs what is not done, and a run of a
different config is refused before anything is written. A finished point run counts
only when its spec is the planned point's: the same point and repeat, the same seed,
the same point hash (config and data files) and the same run (the manifest's config
hash); a rep directory copied from another run or another point is ``damaged`` and
run again (docs/design.md §5).
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
from sim.sweep.identity import DataDigests, config_hash, config_identity, first_difference
from sim.sweep.spec import SpecError, read_spec_data

__all__ = ["PlannedRun", "SweepPlan", "axis_columns", "plan_sweep"]


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

    def check_resumable(self, out_dir: Path) -> None:
        """RunDirError when ``out_dir`` holds a run of a different experiment."""
        if self.existing and self.difference:
            raise RunDirError(
                f"{out_dir}: cannot resume, the config changed since this run started "
                f"({self.difference}); restore it, or pass --force to start over"
            )


def _difference(
    cfg: ExperimentConfig, manifest: dict[str, Any], digests: DataDigests | None = None
) -> str:
    if manifest.get("config_hash") == config_hash(cfg, digests):
        return ""
    old = manifest.get("config")
    if not isinstance(old, dict) or "config_hash" not in manifest:
        return "the run records no config hash (made by an older kvsim)"
    identity = config_identity(cfg, digests)
    return first_difference(old, identity) or "resolved config hash differs"


def _not_planned(rep: RepRun, point_hash: str, run_hash: str) -> str:
    """Why the finished run in ``rep.dir`` is not the planned point run ("" when it is)."""
    try:
        spec = read_spec_data(rep.dir)
    except SpecError as exc:
        return f"its spec cannot be read ({exc})"
    if not isinstance(spec, dict):
        return "its spec is not a JSON object"
    config = spec.get("config")
    seed = config.get("seed") if isinstance(config, dict) else None
    if (spec.get("index"), spec.get("repeat")) != (rep.point.index, rep.repeat):
        where = f"point {spec.get('index')!r} repeat {spec.get('repeat')!r}"
        return f"its spec is of {where}, not point {rep.point.index} repeat {rep.repeat}"
    if seed != rep.point.config.seed:
        return f"its spec has seed {seed!r}, the planned point {rep.point.config.seed}"
    if spec.get("point_hash") != point_hash:
        return "its spec's config or data files are not the planned point's (point hash)"
    if spec.get("run_hash") != run_hash:
        return "its spec belongs to another run (its run hash is not this run's config hash)"
    return ""


def plan_sweep(
    cfg: ExperimentConfig,
    points: Sequence[Point],
    out_dir: Path,
    digests: DataDigests | None = None,
) -> SweepPlan:
    """Every point run and its state in ``out_dir``; reads only, never writes.

    ``digests``: the sweep's planned data-file hashes (read here when not given)."""
    digests = digests if digests is not None else DataDigests()
    manifest = read_manifest(out_dir)
    difference = _difference(cfg, manifest, digests) if manifest is not None else ""
    run_hash = config_hash(cfg, digests)
    hashes: dict[int, str] = {}
    runs = []
    for rep in rep_runs(out_dir, list(points), cfg.repeats):
        if manifest is None or difference:
            runs.append(PlannedRun(rep, "pending"))
            continue
        state, why = verify_rep(rep.dir)
        if state == "done":
            index = rep.point.index
            if index not in hashes:
                hashes[index] = config_hash(rep.point.config, digests)
            why = _not_planned(rep, hashes[index], run_hash)
            state = "damaged" if why else state
        runs.append(PlannedRun(rep, state, why))
    return SweepPlan(runs, manifest is not None, difference)
