"""Files made *from* a run's results (``compare.md``, ``figures/``), and when they go stale.

``kvsim compare`` and ``kvsim plot`` write into the run directory. When a
``--resume`` then adds points, those files describe the partial run: rather than
leave them beside newer results, the resume removes them (only the names kvsim
writes) and says so, so that nothing on disk contradicts ``summary.csv``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIGURE_FILES", "derived_files", "remove_stale_derived"]

#: Every PNG ``kvsim plot`` may write into ``figures/``.
FIGURE_FILES = (
    "latency_cdf.png",
    "latency_ccdf.png",
    "p99_latency.png",
    "gil_hold.png",
    "engine_steps.png",
    "hold_stages.png",
    "latency_vs_rate.png",
    "search.png",
)


def derived_files(run_dir: Path) -> list[Path]:
    """The compare and figure files present in ``run_dir`` (only names kvsim writes)."""
    found = [*run_dir.glob("compare*.md"), *run_dir.glob("compare*.csv")]
    figures = run_dir / "figures"
    found += [figures / n for n in FIGURE_FILES if (figures / n).is_file()]
    return sorted(p for p in found if p.is_file())


def remove_stale_derived(run_dir: Path) -> list[Path]:
    """Remove the derived files of ``run_dir`` (and ``figures/`` when that leaves it empty)."""
    gone = derived_files(run_dir)
    for p in gone:
        p.unlink(missing_ok=True)
    figures = run_dir / "figures"
    if figures.is_dir() and not any(figures.iterdir()):
        figures.rmdir()
    return gone
