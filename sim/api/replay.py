"""``replay_run``: a finished real run directory replayed through the model, point by point.

The mechanism level of model validation (sim.model.replay says what is replayed and
why). This module only reads the run: every finished point run's ``spec.json`` (its
resolved config and repeat), ``requests.csv``, ``summary.csv`` and, when the engine
ran, ``steps.csv``; it lives above the sweep that writes them (sim.model may not import
sim.sweep: docs/design.md §2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sim.config import Point
from sim.config.plugins import plugin_scope
from sim.errors import RunDirError
from sim.rundir.layout import (
    POINTS_DIR,
    REQUESTS_FILE,
    SUMMARY_FILE,
    point_rep_dirs,
    table_file,
    verify_rep,
)
from sim.rundir.outputs import read_csv
from sim.sweep.spec import PointSpec, read_spec_data, spec_plugins

if TYPE_CHECKING:  # the model loads only when a replay runs
    from sim.model.calibration import Calibration
    from sim.model.replay import RealRep, ReplayPoint

__all__ = ["repeat_run", "replay_run"]

#: The engine's per-step table (sim.instruments.engine), when the engine ran.
_STEPS = table_file("steps")


def replay_run(
    run_dir: str | Path,
    *,
    calibration: Calibration | None = None,
    background: float | Mapping[str, float] | None = None,
) -> list[ReplayPoint]:
    """Replay every point of the real run in ``run_dir`` (its finished repeats pooled), in
    the grid's order. ``calibration``: None reads each point's ``machine.calibration``.
    ``background``: the other processes' runnable threads for the model's cores, one
    figure for all points or one per point slug (a point not named: as configured).
    RunDirError (one line) when the directory holds no finished real point."""
    from sim.model.replay import replay_point  # the model: only when replaying

    out: list[ReplayPoint] = []
    for slug, point, reps in _real_points(Path(run_dir).expanduser()):
        load = background.get(slug) if isinstance(background, Mapping) else background
        out.append(replay_point(point, reps, calibration, load, slug))
    return out


def repeat_run(points: Sequence[ReplayPoint], again_dir: str | Path) -> list[ReplayPoint]:
    """A real run's ``points`` (replay_run's) against a second real run of the same grid and
    seeds in ``again_dir`` (validate-model --aa's ``real-again/``), by the mechanism's
    targets: what the real side repeats. The points finished in both, in the grid's order
    (``draws`` 0: the other side is real). RunDirError (one line) when ``again_dir`` holds
    no finished real point."""
    from sim.model.replay import against, figures  # the scoring: only when judging

    again = {slug: reps for slug, _, reps in _real_points(Path(again_dir).expanduser())}
    return [
        against(p, figures(row for rep in again[p.slug] for row in rep.requests))
        for p in points
        if p.slug in again
    ]


def _real_points(run: Path) -> list[tuple[str, Point, list[RealRep]]]:
    """Each point of a real run with its finished repeats (slug, point, repeats)."""
    from sim.model.replay import RealRep  # the model: only when replaying

    root = run / POINTS_DIR
    if not root.is_dir():
        raise RunDirError(f"{run}: no {POINTS_DIR}/ directory; not a kvsim run directory")
    out: list[tuple[str, Point, list[RealRep]]] = []
    for point_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        slug = point_dir.name
        point: Point | None = None
        reps: list[RealRep] = []
        for repeat, rep in point_rep_dirs(run, slug):
            if verify_rep(rep)[0] != "done":
                continue
            data = read_spec_data(rep)
            with plugin_scope(spec_plugins(data)):
                spec = PointSpec.from_json(data)
            if spec.config.mode != "real":
                continue
            point = Point(index=spec.index, axes=dict(spec.axes), config=spec.config)
            steps, summary = rep / _STEPS, rep / SUMMARY_FILE
            rows = read_csv(summary) if summary.is_file() else []
            reps.append(
                RealRep(
                    repeat,
                    read_csv(rep / REQUESTS_FILE),
                    read_csv(steps) if steps.is_file() else [],
                    rows[0] if rows else {},
                )
            )
        if point is not None:
            out.append((slug, point, reps))
    if not out:
        raise RunDirError(f"{run}: no finished real point run to replay")
    return out
