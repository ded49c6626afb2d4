"""Where each run of a sweep point lives on disk, and how a finished one is recognised.

Every grid point × repeat gets a directory of its own::

    RUN/points/<slug>/rep-<k>/
        spec.json       what the child process runs (resolved config, point, repeat)
        requests.csv    that run's requests, with the axis and repeat columns
        summary.csv     its one summary row
        <stem>.csv      extra tables of add-ons (steps.csv, ...)
        stderr.log      the child's stderr (and any stray stdout)
        status.json     written LAST, atomically: {"status": "ok" | "failed" | ...}

A run counts as finished only when ``status.json`` says ``ok``: it is written
after every other file, by rename, so a crash or a kill at any moment leaves
either a finished run or one that a resumed sweep redoes from scratch.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.config import Point
from sim.rundir.outputs import write_json

__all__ = [
    "LOG_FILE",
    "POINTS_DIR",
    "SPEC_FILE",
    "STATUS_FILE",
    "RepRun",
    "clear_rep_dir",
    "read_status",
    "rep_runs",
    "write_status",
]

POINTS_DIR = "points"
SPEC_FILE = "spec.json"
STATUS_FILE = "status.json"
LOG_FILE = "stderr.log"

#: Status values a status.json may hold; only "ok" means finished.
STATUSES = ("ok", "failed", "interrupted")


@dataclass(frozen=True)
class RepRun:
    """One repeat of one grid point, and its directory."""

    point: Point
    repeat: int
    dir: Path

    @property
    def label(self) -> str:
        return f"{self.point.label} rep {self.repeat}"

    def status(self) -> dict[str, Any] | None:
        return read_status(self.dir)

    @property
    def done(self) -> bool:
        st = self.status()
        return st is not None and st.get("status") == "ok"


def rep_runs(run_dir: Path, points: list[Point], repeats: int) -> list[RepRun]:
    """Every point × repeat of a sweep, in the order they run."""
    return [
        RepRun(p, k, run_dir / POINTS_DIR / p.slug / f"rep-{k}")
        for p in points
        for k in range(repeats)
    ]


def read_status(rep_dir: Path) -> dict[str, Any] | None:
    """The status marker of a run directory, or None when absent or unreadable."""
    try:
        data = json.loads((rep_dir / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("status") not in STATUSES:
        return None
    return data


def write_status(rep_dir: Path, status: str, **fields: Any) -> None:
    """Write the marker atomically; call it after every other file of the run."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    write_json(rep_dir / STATUS_FILE, {"status": status, **fields})


def clear_rep_dir(run_dir: Path, rep_dir: Path) -> None:
    """Remove what an earlier, unfinished attempt left, and create the directory afresh.

    Refuses any directory outside ``run_dir/points`` so that a bad slug can never
    make kvsim delete something it did not write.
    """
    root = (run_dir / POINTS_DIR).resolve()
    target = rep_dir.resolve()
    if root not in target.parents:
        raise ValueError(f"{rep_dir} is not inside {root}")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
