"""Files made *from* a run's results (``compare.md``, ``figures/``), and when they go stale.

``kvsim compare`` and ``kvsim plot`` write into the run directory. When a
``--resume`` then adds points, those files describe the partial run: rather than
leave them beside newer results, the resume removes them (only the names kvsim
writes, as its ledger lists them: a user's ``compare_notes.md`` stays) and says so,
so that nothing on disk contradicts ``summary.csv``. Likewise a sweep that ends
removes those made while it ran (a ``compare`` or ``plot`` of the run while it was
being written: they say so inside, and must not outlive it looking final).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from sim.rundir.guard import owned_files
from sim.rundir.layout import COMPARE_STEM, FIGURES_DIR, figures_dir
from sim.rundir.verify import first_link

__all__ = ["derived_files", "remove_derived_since", "remove_stale_derived"]


def derived_files(run_dir: Path) -> list[Path]:
    """The compare and figure files kvsim wrote in ``run_dir`` and that are still there."""
    found = [
        run_dir / name
        for name in owned_files(run_dir)
        if name.startswith(COMPARE_STEM) or name.startswith(f"{FIGURES_DIR}/")
    ]
    return sorted(
        p
        for p in found
        if first_link(run_dir, p) is None and p.is_file()  # never through or at a link
    )


def remove_stale_derived(run_dir: Path) -> list[Path]:
    """Remove the derived files of ``run_dir`` (and ``figures/`` when that leaves it empty)."""
    return _remove(run_dir, derived_files(run_dir))


def remove_derived_since(run_dir: Path, since_unix: float) -> list[Path]:
    """Remove the derived files of ``run_dir`` written at or after ``since_unix``."""
    fresh = []
    for p in derived_files(run_dir):
        with contextlib.suppress(OSError):
            if p.stat().st_mtime >= since_unix:
                fresh.append(p)
    return _remove(run_dir, fresh)


def _remove(run_dir: Path, gone: list[Path]) -> list[Path]:
    for p in gone:
        p.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        figures_dir(run_dir).rmdir()  # only when empty, and never a link
    return gone
