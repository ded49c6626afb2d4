"""How complete a run directory is, said to whoever reads it.

``compare``, ``plot`` and ``run --dry-run`` read runs that may still be being
written (another process holds the lock) or that were interrupted (the
manifest still says ``running`` and nobody holds the lock). They say so, with
how much of the run is there, instead of presenting a part as the whole; and
they use the top-level tables only when each still has the size and checksum
the run recorded for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.rundir.lock import describe_holder, holder
from sim.rundir.manifest import read_manifest
from sim.rundir.verify import verify_files

__all__ = ["progress_phrase", "run_state_note", "verify_tables"]


def progress_phrase(manifest: dict[str, Any] | None) -> str:
    runs = (manifest or {}).get("runs")
    if not isinstance(runs, dict) or not isinstance(runs.get("total"), int):
        return "how much of it is there is not recorded"
    return f"{runs.get('done', 0)} of {runs['total']} point run(s) finished" + (
        f", {runs['failed']} failed" if runs.get("failed") else ""
    )


def run_state_note(run_dir: Path, written_only: bool = False) -> str:
    """One line when the run is being written now or (unless ``written_only``) was
    interrupted; "" when whole."""
    manifest = read_manifest(run_dir)
    who = holder(run_dir)
    if who is not None:
        return (
            f"note: {run_dir} is still being written ({describe_holder(who)}): "
            f"{progress_phrase(manifest)} so far"
        )
    if written_only:
        return ""
    if manifest is not None and manifest.get("status") in ("running", "interrupted"):
        return (
            f"note: {run_dir} was interrupted: {progress_phrase(manifest)}; "
            "`kvsim run CONFIG --resume` finishes it"
        )
    return ""


def verify_tables(run_dir: Path, names: list[str]) -> str:
    """ "" when each of ``names`` matches the manifest's record; else why not (one line)."""
    manifest = read_manifest(run_dir) or {}
    tables = manifest.get("tables")
    if not isinstance(tables, dict):
        return ""  # an older kvsim recorded no checksums: nothing to check against
    records = {n: tables.get(n) for n in names if n in tables}
    missing = [n for n in names if n not in tables]
    if missing and tables:
        return f"{missing[0]} was not written by this run"
    if not records:
        return ""
    return verify_files(run_dir, records)
