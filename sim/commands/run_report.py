"""What ``kvsim run`` prints once the points are done: the comparison table (condensed
for a big sweep unless ``--all-rows``), the warnings under it (a line per point, or
one per kind when many), the stage table, where the results are, and what failed.
"""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console

from sim.analysis.audit import audit_problems
from sim.analysis.behind import lag_line
from sim.analysis.condense import MAX_TABLE_ROWS, condense, shown_count
from sim.analysis.gil_onoff import gil_onoff_report
from sim.analysis.point_notes import audit_line, point_warnings
from sim.analysis.report import comparison_table, pick_baseline
from sim.analysis.stage_report import has_stages, stage_table
from sim.api.run_config import RunArgs
from sim.config.experiment import ExperimentConfig
from sim.console import output_console
from sim.rundir.layout import (
    MANIFEST_FILE,
    POINTS_DIR,
    REQUESTS_FILE,
    SUMMARY_FILE,
    SUMMARY_REPEATS_FILE,
    RepRun,
)
from sim.sweep.session import SweepOutcome
from sim.sweep.spec import CHANGED_SINCE_PLANNED

__all__ = ["report"]


def _print_behind(out: Console, rows: list[dict[str, Any]], axes: list[str]) -> None:
    """Warnings for points that did not apply their load or whose meter exceeds the
    py-spy audit (a sentence each, or one line per kind when many:
    sim.analysis.point_notes); one quiet line for the points that lagged while applying
    it (sim.analysis.behind); one line per reason the audit could not run."""
    for note in point_warnings(rows, axes):
        out.print(f"[yellow]warning:[/yellow] {note}", highlight=False)
    quiet = lag_line(rows)  # lag while the load was applied: one line, not a warning
    if quiet:
        out.print(quiet, highlight=False, markup=False)
    for why in audit_problems(rows):
        out.print(f"[yellow]warning:[/yellow] GIL audit not run: {why}", highlight=False)
    line = audit_line(rows)
    if line:
        out.print(line, highlight=False)


def _print_table(
    out: Console,
    rows: list[dict[str, Any]],
    axes: list[str],
    baseline: str | None,
    title: str,
    args: RunArgs,
    limit: int | None,
) -> None:
    """The comparison table, condensed above ``limit`` rows, with a line that says where
    every point is and how to print them all."""
    out.print(comparison_table(rows, axes, baseline, title, limit))
    shown = shown_count(condense(rows, axes, limit))
    if shown < len(rows):
        again = shlex.join([*args.rerun_command(), "--resume", "--all-rows"])
        out.print(
            f"the table shows {shown:,} of {len(rows):,} points; every point is a row of "
            f"summary.csv, and `{again}` prints them all (it runs nothing that is done)",
            highlight=False,
            markup=False,
        )


def report(cfg: ExperimentConfig, args: RunArgs, out_dir: Path, outcome: SweepOutcome) -> int:
    """Print the end of a run; the exit code (1 when a point failed)."""
    result = outcome.result
    rows = result.summary_rows
    if not args.quiet:
        out = output_console()
        err = Console(stderr=True)
        baseline = pick_baseline(rows, args.baseline)
        if args.baseline and baseline is None:
            err.print(f"warning: baseline {args.baseline!r} is not among the variants run")
        if result.skipped:
            out.print(f"resumed: {result.skipped} point run(s) were already done and kept")
        limit = None if args.all_rows else MAX_TABLE_ROWS
        _print_table(out, rows, result.axes, baseline, f"kvsim · {cfg.name}", args, limit)
        _print_behind(out, rows, result.axes)
        if has_stages(rows):
            out.print(stage_table(rows, result.axes, "where the hold goes", limit))
        for line in gil_onoff_report(out_dir):  # a run that swept interpreter.gil: on, off
            out.print(line, markup=False, highlight=False)
        nf = outcome.noise_floor_p99_ms
        files = ", ".join(
            (REQUESTS_FILE, SUMMARY_FILE, SUMMARY_REPEATS_FILE, MANIFEST_FILE, f"{POINTS_DIR}/")
        )
        out.print(f"harness noise floor: p99 ≤ {nf:.3f} ms · results in {out_dir}/ ({files})")
    if outcome.failed_requests:
        print(
            f"warning: {outcome.failed_requests} request(s) failed; see the error column of "
            f"{out_dir / REQUESTS_FILE}",
            file=sys.stderr,
        )
    for rep, state, error in outcome.unfinished[:_LISTED]:
        log = outcome.log_of(rep)
        print(f"error: {rep.label}: {state}: {error} (log: {log})", file=sys.stderr)
    if result.empty_points:
        print(f"error: {len(result.empty_points)} point(s) completed no request", file=sys.stderr)
    if outcome.unfinished:
        print(_unfinished_line(args, outcome.unfinished), file=sys.stderr)
    return 0 if outcome.ok else 1


#: Point runs that did not finish listed one per line; the rest are counted.
_LISTED = 10


def _unfinished_line(args: RunArgs, unfinished: list[tuple[RepRun, str, str]]) -> str:
    """One line however many did not finish: how many of each state, and how to rerun."""
    kinds = Counter(state for _, state, _ in unfinished)
    said = ", ".join(f"{n} {state}" for state, n in sorted(kinds.items()))
    again = shlex.join([*args.rerun_command(), "--resume"])
    if any(CHANGED_SINCE_PLANNED in error for _, _, error in unfinished):
        # --resume refuses a run whose data files changed: it would mix two workloads.
        anew = shlex.join([*args.rerun_command(), "--force"])
        return (
            f"kvsim: error: {len(unfinished)} point run(s) did not finish ({said}): a data "
            f"file changed during the sweep; restore it and `{again}` runs them again, "
            f"or `{anew}` starts over with it as it is now"
        )
    return (
        f"kvsim: error: {len(unfinished)} point run(s) did not finish ({said}); "
        f"`{again}` runs them again"
    )
