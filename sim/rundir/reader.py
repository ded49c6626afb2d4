"""A finished (or partly finished) run directory, read back for ``compare`` and ``plot``.

Both commands work from the files a run leaves — ``manifest.json``, ``summary.csv``,
``requests.csv`` and any add-on table such as ``steps.csv`` — so that results
handed around as a directory can be analysed without the config or the code
version that made them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim.rundir.guard import RunDirError
from sim.rundir.layout import MANIFEST_FILE, SUMMARY_FILE, table_file
from sim.rundir.manifest import read_manifest
from sim.rundir.numbers import as_float
from sim.rundir.outputs import read_csv
from sim.rundir.state import run_state_note, verify_tables

__all__ = ["RunResults", "as_float", "column", "load_results"]

_SUMMARY_LEAD_END = ("repeats", "repeat", "requests")


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
    #: One line when the run is still being written or was interrupted ("" when whole).
    note: str = ""

    @property
    def name(self) -> str:
        cfg = self.manifest.get("config")
        return str(cfg.get("name", self.dir.name)) if isinstance(cfg, dict) else self.dir.name

    def has_table(self, stem: str) -> bool:
        return (self.dir / table_file(stem)).is_file()

    def table(self, stem: str) -> list[dict[str, str]]:
        """Rows of ``<stem>.csv`` (cached); empty when the file does not exist; RunDirError
        when it is not the file the run wrote (size or checksum differ)."""
        if stem not in self._tables:
            path = self.dir / table_file(stem)
            self._tables[stem] = (
                _read_verified(self.dir, table_file(stem)) if path.is_file() else None
            )
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


def _read_verified(run: Path, name: str) -> list[dict[str, str]]:
    why = verify_tables(run, [name])
    if why:
        raise RunDirError(
            f"{run}: {why}; its rows cannot be trusted: `kvsim run CONFIG --resume` "
            "rebuilds the tables from the verified points"
        )
    try:
        return read_csv(run / name)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunDirError(f"{run / name}: unreadable ({type(exc).__name__})") from None


def load_results(path: str | Path) -> RunResults:
    """Read a run directory; RunDirError (one line) when it is not a usable kvsim run."""
    run = Path(path).expanduser()
    if run.is_file():  # most often the config: the run is the directory it wrote
        raise RunDirError(
            f"{run}: a file, not a run directory; give the directory `kvsim run` wrote "
            "(its output.dir, or --out)"
        )
    if not run.is_dir():
        raise RunDirError(f"{run}: no such run directory")
    manifest = read_manifest(run)
    if manifest is None:
        raise RunDirError(f"{run}: no readable kvsim {MANIFEST_FILE}; not a kvsim run directory")
    summary_path = run / SUMMARY_FILE
    if os.path.lexists(summary_path) and (summary_path.is_symlink() or not summary_path.is_file()):
        raise RunDirError(
            f"{summary_path}: not a regular file (a pipe, device, directory or link); kvsim "
            "reads only the summary.csv a run wrote: `kvsim run CONFIG --resume` writes it again"
        )
    if not summary_path.is_file():
        raise RunDirError(f"{run}: no {SUMMARY_FILE} yet; has any point finished?")
    summary = _read_verified(run, SUMMARY_FILE)
    if "status" in (summary[0] if summary else {}):
        summary = [r for r in summary if r.get("status") != "failed"]
    if not summary:
        raise RunDirError(f"{run}: {SUMMARY_FILE} has no finished point")
    note = run_state_note(run, written_only=True)
    return RunResults(run, manifest, _axes_from(manifest, summary), summary, note=note)
