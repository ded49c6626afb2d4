"""A finished (or partly finished) run directory, read back for ``compare`` and ``plot``.

Both commands work from the files a run leaves — ``manifest.json``, ``summary.csv``,
``requests.csv`` and any add-on table such as ``steps.csv`` — so that results
handed around as a directory can be analysed without the config or the code
version that made them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim.rundir.guard import RunDirError
from sim.rundir.outputs import read_csv

__all__ = ["RunResults", "as_float", "column", "load_results"]

_SUMMARY_LEAD_END = ("repeats", "repeat", "requests")


def as_float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def column(rows: list[dict[str, Any]], name: str) -> np.ndarray:
    """A column as floats (empty or non-numeric cells become NaN)."""
    return np.fromiter((as_float(r.get(name)) for r in rows), dtype=float, count=len(rows))


@dataclass
class RunResults:
    dir: Path
    manifest: dict[str, Any]
    #: Axis columns of the sweep, in order (always includes variant and workers).
    axes: list[str]
    #: summary.csv rows (one per point).
    summary: list[dict[str, str]]
    _tables: dict[str, list[dict[str, str]] | None] = field(default_factory=dict)

    @property
    def name(self) -> str:
        cfg = self.manifest.get("config")
        return str(cfg.get("name", self.dir.name)) if isinstance(cfg, dict) else self.dir.name

    def has_table(self, stem: str) -> bool:
        return (self.dir / f"{stem}.csv").is_file()

    def table(self, stem: str) -> list[dict[str, str]]:
        """Rows of ``<stem>.csv`` (cached); empty when the file does not exist."""
        if stem not in self._tables:
            path = self.dir / f"{stem}.csv"
            self._tables[stem] = read_csv(path) if path.is_file() else None
        return self._tables[stem] or []

    def summary_has(self, col: str) -> bool:
        return any(r.get(col) not in ("", None) for r in self.summary)

    def key(self, row: dict[str, Any], axes: list[str] | None = None) -> tuple[str, ...]:
        return tuple(str(row.get(a, "")) for a in (self.axes if axes is None else axes))


def _axes_from(manifest: dict[str, Any], summary: list[dict[str, str]]) -> list[str]:
    axes = manifest.get("axes")
    if isinstance(axes, list) and all(isinstance(a, str) for a in axes):
        return list(axes)
    cols = list(summary[0]) if summary else ["variant", "workers"]
    for end in _SUMMARY_LEAD_END:
        if end in cols:
            return cols[: cols.index(end)]
    return ["variant", "workers"]


def load_results(path: str | Path) -> RunResults:
    """Read a run directory; RunDirError (one line) when it is not a usable kvsim run."""
    run = Path(path)
    if not run.is_dir():
        raise RunDirError(f"{run}: no such run directory")
    try:
        manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise RunDirError(f"{run}: no readable manifest.json; not a kvsim run directory") from None
    if not isinstance(manifest, dict) or manifest.get("tool") != "kvsim":
        raise RunDirError(f"{run}: manifest.json is not a kvsim manifest")
    if not (run / "summary.csv").is_file():
        raise RunDirError(f"{run}: no summary.csv yet; has any point finished?")
    summary = read_csv(run / "summary.csv")
    if "status" in (summary[0] if summary else {}):
        summary = [r for r in summary if r.get("status") != "failed"]
    if not summary:
        raise RunDirError(f"{run}: summary.csv has no finished point")
    return RunResults(run, manifest, _axes_from(manifest, summary), summary)
