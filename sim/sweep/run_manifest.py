"""manifest.json of a run: what was run, on what, in which sessions, and kvsim's files.

Kept across resumed sessions (each appends its own entry) and rewritten atomically
after every point run, so that an interrupted sweep leaves a manifest that says so.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sim import columns
from sim.config.experiment import ExperimentConfig, Point
from sim.model.coverage import check_points
from sim.native import native_state
from sim.process.interpreter import InterpreterError, probe, resolve_python
from sim.rundir.guard import owned_files
from sim.rundir.manifest import MANIFEST_TOOL, machine_info, write_manifest
from sim.sweep.identity import DataDigests, config_hash, config_identity
from sim.sweep.plan import axis_columns

__all__ = ["RunManifest"]


def _interpreter_entry(name: str) -> dict[str, Any]:
    """The python ``name`` resolves to and what it says of itself (validation asked it)."""
    try:
        found = probe(resolve_python(name))
    except InterpreterError as exc:
        return {"error": str(exc)}
    return {"path": found.path, "version": found.version, "build": found.build}


class RunManifest:
    """manifest.json of this run, kept across resumed sessions."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        source: str,
        points: Sequence[Point],
        out_dir: Path,
        previous: dict[str, Any] | None,
        overrides: Sequence[str] = (),
        executor: str = "local",
        digests: DataDigests | None = None,
    ) -> None:
        self._dir = out_dir
        self._started = time.time()
        prev = previous or {}
        self._data: dict[str, Any] = {
            "tool": MANIFEST_TOOL,
            "status": "running",
            "config_path": source,
            "overrides": list(overrides),
            "config": config_identity(cfg, digests),
            "config_hash": config_hash(cfg, digests),
            "seed": cfg.seed,
            "switch_interval_ms": cfg.gil.switch_interval_ms,
            "repeats": cfg.repeats,
            "axes": axis_columns(points),
            "points": [
                {"index": p.index, "slug": p.slug, "axes": p.axes, "label": p.label} for p in points
            ],
            "started_unix": prev.get("started_unix", self._started),
            columns.ELAPSED_S.name: 0.0,
            "sessions": list(prev.get("sessions", [])),
            "runs": {},
            "files": list(prev.get("files", [])),
            "machine": machine_info(),
        }
        pythons = {
            p.config.interpreter.python for p in points if not p.config.interpreter.is_default
        }
        if pythons:  # what each config name meant now (each point's status.json: what it saw)
            self._data["interpreters"] = {name: _interpreter_entry(name) for name in pythons}
        if any(p.config.mode == "model" for p in points):
            self._data["calibration"] = [c.manifest_entry() for c in check_points(points).values()]
            # Compiled or interpreted, the results are the same (tests/test_native.py).
            self._data["model_core"] = native_state()
        self._data["sessions"].append(
            {"started_unix": self._started, "status": "running", "executor": executor}
        )

    def note(self, text: str) -> None:
        """Keep an executor's report (a lost host, a retry) in this session's entry."""
        self._data["sessions"][-1].setdefault("notes", []).append(text)

    def write(self, status: str, runs: dict[str, int], tables: dict[str, Any]) -> None:
        """Rewrite manifest.json: status, counts, kvsim's files and the tables' checksums."""
        self.update(status, runs, tables)
        write_manifest(self._dir, self._data)

    def update(self, status: str, runs: dict[str, int], tables: dict[str, Any]) -> None:
        now = time.time()
        self._data["status"] = status
        self._data["runs"] = runs
        self._data["files"] = sorted({*owned_files(self._dir), *tables})
        self._data["tables"] = tables
        self._data[columns.ELAPSED_S.name] = sum(
            s.get(columns.ELAPSED_S.name, 0.0) for s in self._data["sessions"][:-1]
        ) + (now - self._started)
        self._data["sessions"][-1].update(status=status, elapsed_s=now - self._started)

    @property
    def data(self) -> dict[str, Any]:
        return self._data
