"""The files a point run may hold, and their removal by exact name.

A rep directory (``sim.rundir.layout``) holds kvsim's files and perhaps a user's: a
resumed, forced or retried run clears only what kvsim wrote there (the names below and
those its ``status.json`` records), never following a link, so that nothing kvsim did not
write is deleted.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from sim.errors import RunDirError
from sim.rundir.layout import (
    LOG_FILE,
    POINTS_DIR,
    REQUESTS_FILE,
    SPEC_FILE,
    STATUS_FILE,
    SUMMARY_FILE,
    read_status,
)
from sim.rundir.outputs import is_temporary_of
from sim.rundir.verify import first_link

__all__ = [
    "REP_FILES",
    "clear_rep_dir",
    "remove_rep_files",
    "remove_temporaries",
    "rep_file_names",
]

#: Files every point run may hold, whatever it measured.
REP_FILES = (SPEC_FILE, STATUS_FILE, LOG_FILE, REQUESTS_FILE, SUMMARY_FILE)


def rep_file_names(rep_dir: Path, tables: Iterable[str] = ()) -> set[str]:
    """The exact names kvsim may have written in ``rep_dir``: :data:`REP_FILES`, the
    files its ``status.json`` records, and ``tables`` (the run's add-on tables, e.g.
    ``gc.csv``). Any other name there is not kvsim's (a user's ``analysis.csv``)."""
    names = {*REP_FILES, *tables}
    status = read_status(rep_dir)
    files = status.get("files") if status is not None else None
    if isinstance(files, dict):
        names.update(n for n in files if isinstance(n, str) and n == Path(n).name)
    return {n for n in names if n and not n.startswith(".")}


def remove_rep_files(rep_dir: Path, tables: Iterable[str] = ()) -> None:
    """Remove kvsim's files from a rep directory by exact name (:func:`rep_file_names`,
    and the temporaries their atomic writes leave), never following a link; then the
    directory itself when nothing else is left in it."""
    names = rep_file_names(rep_dir, tables)
    try:
        entries = list(os.scandir(rep_dir))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            continue
        if entry.name in names or any(is_temporary_of(entry.name, n) for n in names):
            os.unlink(entry.path)
    with contextlib.suppress(OSError):  # something that is not kvsim's is in there: leave it
        os.rmdir(rep_dir)


def remove_temporaries(rep_dir: Path) -> None:
    """Remove the temporaries an atomic write of a point's table leaves when its child
    dies mid-write (``.requests.csv.<8 characters>.tmp``): a failed point keeps its
    status, spec and log, not half a table. Only kvsim's exact temporary names of a
    ``.csv`` or ``.json`` file, never following a link."""
    try:
        entries = list(os.scandir(rep_dir))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(".tmp") and len(name) > 14):
            continue
        target = name[1:-13]  # between "." and ".<8 characters>.tmp"
        ours = target.endswith((".csv", ".json")) and is_temporary_of(name, target)
        if ours and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def clear_rep_dir(run_dir: Path, rep_dir: Path) -> None:
    """Remove what an earlier, unfinished attempt left, and create the directory afresh.

    Refuses a directory outside ``run_dir/points``, or reached through a symbolic
    link, so that a bad slug or a planted link can never make kvsim delete or
    write something it did not write.
    """
    root = run_dir / POINTS_DIR
    if root not in rep_dir.parents:
        raise RunDirError(f"{rep_dir} is not inside {root}")
    link = first_link(run_dir, rep_dir)
    if link is not None:
        raise RunDirError(
            f"{link}: is a symbolic link; kvsim neither follows nor removes links in a run "
            "directory: remove it, or pass --out to write elsewhere"
        )
    remove_rep_files(rep_dir)
    rep_dir.mkdir(parents=True, exist_ok=True)
    for name in REP_FILES:  # a directory where kvsim writes a file: every attempt would fail
        there = rep_dir / name
        if os.path.lexists(there) and not there.is_file():
            raise RunDirError(
                f"{there}: is a directory (or another non-file) where kvsim writes its "
                f"{name}; move it out of the run directory (kvsim removes only the files "
                "it wrote), then resume"
            )
