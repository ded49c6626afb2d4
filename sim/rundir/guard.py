"""The run directory: what kvsim may write where, and how a previous run is recognised.

kvsim refuses to write into a directory that is not one of its own runs, and
replaces a previous run only when asked (``--force``), removing only the files
it wrote itself. ``--resume`` keeps a previous run so that its finished points
are not run again (the sweep checks that the config is still the same).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from sim.errors import RunDirError
from sim.rundir.manifest import MANIFEST_TOOL

__all__ = ["OWNED", "RunDirError", "is_kvsim_run", "prepare_run_dir"]

#: Everything kvsim writes at the top of a run directory.
OWNED = (
    "manifest.json",
    "requests.csv",
    "summary.csv",
    "summary_repeats.csv",
    "results.json",
    "search.json",
    "steps.csv",
    "gc.csv",
    "points",
    "figures",
    "compare.md",
    "compare.csv",
)


def is_kvsim_run(path: Path) -> bool:
    try:
        data = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("tool") == MANIFEST_TOOL


def _previous_files(path: Path) -> list[str]:
    """Top-level files the previous run's manifest lists as its own (plain names only)."""
    try:
        data = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        return []
    return [
        f
        for f in files
        if isinstance(f, str)
        and f.endswith(".csv")
        and "/" not in f
        and "\\" not in f
        and not f.startswith(".")
    ]


def prepare_run_dir(path: Path, force: bool, resume: bool = False) -> None:
    """Make ``path`` ready for a new run (or, with ``resume``, for continuing the one
    there), or raise RunDirError saying why not."""
    if force and resume:
        raise RunDirError("--force and --resume contradict each other; choose one")
    if path.exists() and not path.is_dir():
        raise RunDirError(f"{path}: exists and is not a directory")
    if path.is_dir() and any(path.iterdir()):
        if not is_kvsim_run(path):
            raise RunDirError(
                f"{path}: directory is not empty and holds no kvsim run; "
                "choose another output.dir (or --out)"
            )
        if not force and not resume:
            raise RunDirError(
                f"{path}: holds a previous kvsim run; pass --resume to finish it, "
                "--force to replace it, or --out to write elsewhere"
            )
        # kvsim compare --out may have written more comparisons beside the default one.
        extra = [p.name for p in (*path.glob("compare*.md"), *path.glob("compare*.csv"))]
        for name in () if resume else (*OWNED, *_previous_files(path), *extra):
            target = path / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".kvsim-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise RunDirError(f"{path}: cannot write ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK):
        raise RunDirError(f"{path}: cannot write (permission denied)")
