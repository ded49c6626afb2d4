"""Where each run of a sweep point lives on disk, and how a finished one is recognised.

Every grid point × repeat gets a directory of its own::

    RUN/points/<slug>/rep-<k>/
        spec.json       what the child process runs (resolved config, point, repeat)
        requests.csv    that run's requests, with the axis and repeat columns
        summary.csv     its one summary row
        <stem>.csv      extra tables of add-ons (steps.csv, ...)
        stderr.log      the child's stderr (and any stray stdout)
        status.json     written LAST, atomically: {"status": "ok" | "failed" | ...}

A run counts as finished only when ``status.json`` says ``ok`` AND every file it
lists (with its size and checksum, see ``sim.rundir.verify``) is still there as
written: it is written after every other file, by rename, so a crash or a kill at
any moment leaves either a finished run or one that a resumed sweep redoes from
scratch, and a file damaged later is found and its point run again. (A model-mode
point run's files are renamed into place without fsync: a power cut may lose them,
which the same checks catch — the run is redone, never taken as whole.)

This module is the one owner of the run directory's file names: other code
uses the constants below, never the literal names.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim.config import Point
from sim.errors import RunDirError
from sim.files.read import read_bounded
from sim.rundir.outputs import write_json
from sim.rundir.verify import record_files, verify_files

__all__ = [
    "COMPARE_STEM",
    "FIGURES_DIR",
    "FIGURE_FILES",
    "FIG_ENGINE_STEPS",
    "FIG_GIL_HOLD",
    "FIG_HOLD_STAGES",
    "FIG_LATENCY_CCDF",
    "FIG_LATENCY_CDF",
    "FIG_LATENCY_VS_RATE",
    "FIG_P99_LATENCY",
    "FIG_SEARCH",
    "LEDGER_FILE",
    "LOCK_FILE",
    "LOG_FILE",
    "MANIFEST_FILE",
    "POINTS_DIR",
    "REPORT_FILE",
    "REP_PREFIX",
    "REQUESTS_FILE",
    "RESULTS_FILE",
    "SEARCH_FILE",
    "SPEC_FILE",
    "STATUS_FILE",
    "SUMMARY_FILE",
    "SUMMARY_REPEATS_FILE",
    "RepRun",
    "compare_stem",
    "figure_file",
    "figures_dir",
    "in_run_order",
    "log_file",
    "point_rep_dirs",
    "read_status",
    "rep_dir",
    "rep_runs",
    "report_file",
    "search_file",
    "spec_file",
    "status_file",
    "table_file",
    "verify_rep",
    "write_ok",
    "write_status",
]

#: Top level of a run directory.
MANIFEST_FILE = "manifest.json"
REQUESTS_FILE = "requests.csv"
SUMMARY_FILE = "summary.csv"
SUMMARY_REPEATS_FILE = "summary_repeats.csv"
RESULTS_FILE = "results.json"
#: Held (flock) by the one process writing the run; says who that is.
LOCK_FILE = ".kvsim.lock"
#: Every top-level path kvsim wrote, one per line, appended BEFORE the write.
LEDGER_FILE = ".kvsim-files"
FIGURES_DIR = "figures"
COMPARE_STEM = "compare"
POINTS_DIR = "points"
#: Inside each points/<slug>/rep-<k>/.
SPEC_FILE = "spec.json"
STATUS_FILE = "status.json"
LOG_FILE = "stderr.log"
#: A point run's directory under ``points/<slug>/``: ``rep-<k>``.
REP_PREFIX = "rep-"
#: What ``kvsim search`` records of a search (sim.slo_search.driver).
SEARCH_FILE = "search.json"
#: ``kvsim report``'s page for a pull request (sim.analysis.pr_report).
REPORT_FILE = "report.md"
#: The figures kvsim draws (``kvsim plot``: sim.analysis.plot; the search's own).
FIG_LATENCY_CDF = "latency_cdf.png"
FIG_LATENCY_CCDF = "latency_ccdf.png"
FIG_P99_LATENCY = "p99_latency.png"
FIG_GIL_HOLD = "gil_hold.png"
FIG_ENGINE_STEPS = "engine_steps.png"
FIG_HOLD_STAGES = "hold_stages.png"
FIG_LATENCY_VS_RATE = "latency_vs_rate.png"
FIG_SEARCH = "search.png"
#: Every figure kvsim writes into ``figures/``.
FIGURE_FILES = (
    FIG_LATENCY_CDF,
    FIG_LATENCY_CCDF,
    FIG_P99_LATENCY,
    FIG_GIL_HOLD,
    FIG_ENGINE_STEPS,
    FIG_HOLD_STAGES,
    FIG_LATENCY_VS_RATE,
    FIG_SEARCH,
)
#: A status.json holds one record per file its run wrote; far more is not one.
MAX_STATUS_BYTES = 16 << 20

#: Status values a status.json may hold; only "ok" means finished.
STATUSES = ("ok", "failed", "interrupted")


def rep_dir(run_dir: Path, slug: str, repeat: int) -> Path:
    """The directory of repeat ``repeat`` of the point ``slug``."""
    return run_dir / POINTS_DIR / slug / f"{REP_PREFIX}{repeat}"


def point_rep_dirs(run_dir: Path, slug: str) -> list[tuple[int, Path]]:
    """(repeat, directory) of every point run of ``slug`` that has a directory, by repeat."""
    root = run_dir / POINTS_DIR / slug
    if (run_dir / POINTS_DIR).is_symlink() or root.is_symlink():
        return []  # a link there leads out of the run: never read through it
    found = []
    for d in root.glob(f"{REP_PREFIX}*") if root.is_dir() else []:
        k = d.name.removeprefix(REP_PREFIX)
        if k.isdigit() and d.is_dir() and not d.is_symlink():
            found.append((int(k), d))
    return sorted(found)


def spec_file(rep: Path) -> Path:
    """What a point run's child runs (sim.sweep.spec)."""
    return rep / SPEC_FILE


def log_file(rep: Path) -> Path:
    """A point run's captured stderr."""
    return rep / LOG_FILE


def status_file(rep: Path) -> Path:
    """A point run's status, written last."""
    return rep / STATUS_FILE


def figures_dir(run_dir: Path) -> Path:
    """Where ``kvsim plot`` draws a run's figures by default."""
    return run_dir / FIGURES_DIR


def figure_file(run_dir: Path, name: str) -> Path:
    """A figure of the run (``name`` one of FIGURE_FILES) under ``figures/``."""
    if name not in FIGURE_FILES:
        raise ValueError(f"{name!r} is not a figure kvsim writes; FIGURE_FILES lists them")
    return figures_dir(run_dir) / name


def report_file(run_dir: Path) -> Path:
    """Where ``kvsim report`` writes its page by default."""
    return run_dir / REPORT_FILE


def compare_stem(run_dir: Path, against: str | None = None) -> Path:
    """Where ``kvsim compare`` writes ``.md`` and ``.csv`` by default: ``compare``, or
    ``compare_vs_<against>`` for a comparison with the run named ``against`` (made
    safe for a file name). Both are derived files (sim.rundir.derived)."""
    if against is None:
        return run_dir / COMPARE_STEM
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in against) or "A"
    return run_dir / f"{COMPARE_STEM}_vs_{safe}"


def search_file(run_dir: Path) -> Path:
    """The record of a search in its run directory."""
    return run_dir / SEARCH_FILE


def table_file(stem: str) -> str:
    """File name of a table (``requests`` -> ``requests.csv``)."""
    return f"{stem}.csv"


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
    def spec(self) -> Path:
        return spec_file(self.dir)

    @property
    def log(self) -> Path:
        return log_file(self.dir)

    @property
    def done(self) -> bool:
        """Finished, and every file it wrote is still as it was written."""
        return verify_rep(self.dir)[0] == "done"


#: Mixed into the run's seed for the order of each round, so the order draws never
#: share a stream with the points' own draws.
_ORDER_STREAM = 0x0DE5


def rep_runs(run_dir: Path, points: list[Point], repeats: int) -> list[RepRun]:
    """Every point × repeat of a sweep, point by point (the grid's order; see
    :func:`in_run_order` for the order they run in)."""
    return [RepRun(p, k, rep_dir(run_dir, p.slug, k)) for p in points for k in range(repeats)]


def in_run_order(reps: list[RepRun], order: str, seed: int) -> list[RepRun]:
    """``reps`` in the order a sweep makes them (docs/statistics.md).

    ``grid``: as given (every repeat of a point, then the next point). ``interleaved``:
    in rounds — round k makes repeat k of every point — each round in an order
    shuffled from ``seed`` and the round. A round's order is a permutation of every
    point index, so a resume that runs only some of them keeps their relative order.
    """
    if order == "grid":
        return list(reps)
    if order != "interleaved":
        raise ValueError(f"sweep order must be interleaved or grid, got {order!r}")
    top = max((r.point.index for r in reps), default=-1) + 1
    rank: dict[tuple[int, int], int] = {}
    for k in sorted({r.repeat for r in reps}):
        rng = np.random.default_rng([seed, _ORDER_STREAM, k])
        for pos, index in enumerate(rng.permutation(top)):
            rank[(k, int(index))] = pos
    return sorted(reps, key=lambda r: (r.repeat, rank[(r.repeat, r.point.index)]))


def read_status(rep_dir: Path) -> dict[str, Any] | None:
    """The status marker of a run directory, or None when absent or unreadable."""
    try:
        if stat.S_ISLNK(os.lstat(rep_dir).st_mode):
            return None
        raw = read_bounded(
            rep_dir / STATUS_FILE,
            what="point status",
            limit=MAX_STATUS_BYTES,
            error=RunDirError,
            within=rep_dir,
        )
        data = json.loads(raw)
    except (OSError, RunDirError, ValueError, RecursionError):  # links, FIFOs: not a status
        return None
    if not isinstance(data, dict) or data.get("status") not in STATUSES:
        return None
    return data


def write_status(rep_dir: Path, status: str, *, durable: bool = True, **fields: Any) -> None:
    """Write the marker atomically; call it after every other file of the run.

    ``durable=False``: without fsync (``sim.rundir.outputs.atomic_write_text``).
    """
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    write_json(rep_dir / STATUS_FILE, {"status": status, **fields}, durable)


def write_ok(rep_dir: Path, written: list[str], *, durable: bool = True, **fields: Any) -> None:
    """Mark a run finished, recording the size and checksum of every file it wrote."""
    write_status(rep_dir, "ok", durable=durable, files=record_files(rep_dir, written), **fields)


def verify_rep(rep_dir: Path) -> tuple[str, str]:
    """(state, reason): state is "done", "failed", "interrupted", "damaged" or "pending".

    "damaged": the run says ok but a file it wrote is missing or changed (the
    reason says which); such a run is redone, never combined.
    """
    st = read_status(rep_dir)
    if st is None:
        return "pending", ""
    if st["status"] != "ok":
        return str(st["status"]), str(st.get("error", ""))
    why = verify_files(rep_dir, st.get("files"))
    return ("damaged", why) if why else ("done", "")
