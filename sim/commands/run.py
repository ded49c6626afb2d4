"""``kvsim run CONFIG``: run every point (each in its own process), print the comparison.

``--resume`` finishes an interrupted run (finished points are kept); ``--dry-run``
lists the points and what the run directory already holds, running nothing.
"""

from __future__ import annotations

import argparse
import difflib
import shlex
import sys
from contextlib import ExitStack
from pathlib import Path

from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from sim.analysis.condense import MAX_TABLE_ROWS
from sim.commands.interrupt import hint_on_interrupt
from sim.commands.plugin_args import add_plugin_argument
from sim.commands.run_args import RunArgs
from sim.commands.run_hosts import run_on_hosts
from sim.commands.run_report import report
from sim.config.experiment import Point
from sim.config.plugins import plugin_scope
from sim.conformance import refuse_wrong_plugin_points
from sim.console import error_console, output_console
from sim.errors import UsageError
from sim.events import SweepEvents
from sim.model.validated import unvalidated_note
from sim.preflight import parse_checked
from sim.rundir.guard import normalize_dir
from sim.rundir.layout import RepRun
from sim.sweep.executors import ExecutorChoice, ExecutorError, preflight
from sim.sweep.run_plan import RunPlan, plan_lines, plan_table, repeats_line
from sim.sweep.runner import RepOutcome
from sim.sweep.session import Session, SweepOutcome, open_session, plan_run

HELP = "run an experiment and print a comparison of its points"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="experiment YAML file")
    p.add_argument(
        "--out",
        help="run directory (default: output.dir of the config, else results/<name>, "
        "results/<name>-model in model mode; "
        "a relative path is taken from the working directory)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--force", action="store_true", help="replace a previous run in that directory"
    )
    mode.add_argument(
        "--resume",
        action="store_true",
        help="finish a previous run of the same config: points already done are skipped",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list the points and which are already done; run nothing, write nothing",
    )
    p.add_argument("--baseline", help="variant the ratios are taken against (default: scalar)")
    p.add_argument(
        "--in-process",
        action="store_true",
        help="run points in this process instead of one child process each "
        "(for debuggers; a crash then ends the sweep)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display or table")
    p.add_argument(
        "--all-rows",
        action="store_true",
        help="print every point's row of the end table (by default a sweep of more than "
        f"{MAX_TABLE_ROWS} points prints the first and last points of each variant)",
    )
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where point runs execute: local (default; one after the other here) or ray "
        "(one Ray task per point × repeat on hosts offering the kvsim_host resource)",
    )
    p.add_argument(
        "--address",
        help="Ray cluster address HEAD:PORT for --executor ray (default: $RAY_ADDRESS, else auto)",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=2,
        metavar="N",
        help="--executor ray: times a run whose host is lost is submitted again (2)",
    )
    add_set_argument(p)
    add_mode_argument(p)
    add_plugin_argument(p)


def add_mode_argument(p: argparse.ArgumentParser) -> None:
    """``--mode``: a ``--set`` item with a flag of its own (:func:`set_items`)."""
    p.add_argument(
        "--mode",
        choices=("real", "model"),
        help="override the config's mode: real threads on this machine, or the calibrated "
        "discrete-event model (docs/model-mode.md); same as --set mode=...",
    )


def add_set_argument(p: argparse.ArgumentParser) -> None:
    """``--set``, and ``--audit``, a ``--set`` item with a flag of its own (:func:`set_items`)."""
    p.add_argument(
        "--audit",
        action="store_true",
        help="audit the GIL meter with py-spy on every point (same as --set gil.audit=pyspy)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config field (repeatable), e.g. --set connector.workers=8 or "
        "--set sweep.connector.variant=[scalar,numpy]; a swept field gets that value only",
    )


def check_baseline(baseline: str | None, points: list[Point]) -> None:
    """Refuse a ``--baseline`` that is not among the variants, before any work is done."""
    if baseline is None:
        return

    variants = list(dict.fromkeys(str(p.axes.get("variant")) for p in points))
    if baseline not in variants:
        close = difflib.get_close_matches(baseline, variants, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(
            f"--baseline {baseline!r}: not a variant this config runs; {hint}"
            f"allowed: {', '.join(variants)}"
        )


def _dry_run(plan: RunPlan) -> int:
    out = output_console()
    out.print(plan_table(plan))
    for line in plan_lines(plan):
        out.print(line, soft_wrap=True, markup=False)
    return 0


#: Above this many point runs, model-mode points that end well get no line each (a
#: line costs about as much as a point's outputs; the progress bar counts them).
_MANY = 100


class _ProgressBar:
    """``kvsim run``'s display: one bar of requests over the whole sweep, a line per
    point run as it ends (the sweep's events)."""

    def __init__(self, bar: Progress, plan: RunPlan, resume: bool) -> None:
        self.bar = bar
        self.plan = plan
        self.runs = len(plan.to_run(resume))
        self.planned = plan.planned_requests(resume)
        # The bar's task appears with the first point: an error before it (an unusable
        # output directory) then leaves no "starting 0/0 req" line behind.
        self.task: TaskID | None = None
        self.n = 0
        self.base = 0
        self.current = 0

    def events(self) -> SweepEvents:
        return SweepEvents(started=self.started, progress=self.progress, finished=self.finished)

    def _task(self) -> TaskID:
        """The bar's task, made by the first event (a point run's start)."""
        if self.task is None:
            self.task = self.bar.add_task("starting", total=self.planned)
        return self.task

    def started(self, rep: RepRun, _host: str) -> None:
        bar, point, task = self.bar, rep.point, self._task()
        self.n += 1
        self.current = self.plan.requests[point.index]
        rep_txt = f" rep {rep.repeat}" if self.plan.config.repeats > 1 else ""
        bar.update(task, description=f"[{self.n}/{self.runs}] {point.label}{rep_txt}")

    def progress(self, _rep: RepRun, done: int, total: int) -> None:
        bar, task = self.bar, self._task()
        if total != self.current:
            bar.update(task, total=(bar.tasks[0].total or 0) + total - self.current)
            self.current = total
        bar.update(task, completed=self.base + done)

    def finished(self, rep: RepRun, outcome: RepOutcome | None) -> None:
        bar = self.bar
        if outcome is None:  # an executor's interrupted run: the session does not pass it on
            return
        self.base += self.current
        bar.update(self._task(), completed=self.base)
        if self.runs > _MANY and outcome.status == "ok" and rep.point.config.mode == "model":
            return  # hundreds of lines of milliseconds: the bar says it; failures print
        if outcome.status == "ok":
            bar.console.print(f"[green]✓[/] {rep.label}  ({outcome.elapsed_s:.1f} s)")
        else:
            bar.console.print(f"[red]✗[/] {rep.label}  {outcome.status}: {outcome.error}")


def _run_with_progress(
    session: Session, plan: RunPlan, resume: bool, choice: ExecutorChoice
) -> SweepOutcome:
    err = error_console()
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} req"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
        transient=False,
    ) as bar:
        return session.run(plan, _ProgressBar(bar, plan, resume).events(), choice)


def _say_removed(out_dir: Path, gone: list[Path]) -> None:
    """A resume that adds points removed compare.md and figures/ of the partial run."""
    if gone:
        names = ", ".join(str(p.relative_to(out_dir)) for p in gone)
        print(
            f"note: removed {names} (made from the partial run); run `kvsim compare` / "
            "`kvsim plot` again when the run is complete",
            file=sys.stderr,
        )


def _say_unvalidated(points: list[Point]) -> None:
    """One line when model-mode points combine features no validation covered."""
    note = unvalidated_note(points)
    if note:
        print(f"kvsim: note: {note}", file=sys.stderr)


def _executor_choice(args: RunArgs) -> ExecutorChoice:
    """The executor chosen on the command line; one-line UsageError when it is not usable."""
    if args.executor != "local" and args.in_process:
        raise UsageError(
            f"--in-process runs points here; it cannot go with --executor {args.executor}"
        )
    try:
        choice = ExecutorChoice(args.executor, args.address, args.retries)
    except ExecutorError as exc:
        raise UsageError(f"--executor {args.executor}: {exc}") from None
    preflight(choice)  # no cluster: say so before the run directory is touched
    return choice


def _interpreter_here(points: list[Point], args: RunArgs) -> None:
    """A point under another interpreter (``interpreter:``) runs in a child on this machine:
    refused in one line, before the run directory is touched, where it would not be."""
    if all(p.config.interpreter.is_default or p.config.mode != "real" for p in points):
        return
    if args.in_process:
        raise UsageError(
            "--in-process runs points in kvsim's own interpreter; the config "
            "names another (interpreter:), which needs a child process"
        )
    if args.executor != "local":
        raise UsageError(
            f"--executor {args.executor}: the config's interpreter: runs points "
            "under a python of this machine; run it with the local executor"
        )


def main(cli_args: argparse.Namespace) -> int:
    args = RunArgs.from_cli_args(cli_args)
    with ExitStack() as plugins:
        return _main(args, plugins)


def _main(args: RunArgs, plugins: ExitStack) -> int:
    cfg, points = parse_checked(args.config, args.sets, args.plugins)
    plugins.enter_context(plugin_scope(cfg.plugins))  # their variants, until the command ends
    # a plug-in computing wrong addresses is not measured
    refuse_wrong_plugin_points(points, quiet=args.quiet)
    check_baseline(args.baseline, points)
    # ``~`` expanded, ``..`` folded (no stray directories), absolute: never ambiguous.
    out_dir = normalize_dir(args.out or cfg.output_dir).absolute()
    # refuses model points the calibration lacks
    plan = plan_run(cfg, points, out_dir, source=Path(args.config), overrides=args.sets)
    _say_unvalidated(points)
    if args.dry_run:
        return _dry_run(plan)
    _interpreter_here(points, args)
    choice = _executor_choice(args)
    isolate = not args.in_process
    again = shlex.join(args.rerun_command())
    with (
        open_session(plan, force=args.force, resume=args.resume, isolate=isolate) as session,
        hint_on_interrupt(
            f"finished point runs are kept in {out_dir}; `{again} --resume` runs the rest"
        ),
    ):
        if args.quiet:
            outcome = session.run(plan, None, choice)
        elif choice.name != "local":
            outcome = run_on_hosts(session, plan, args.resume, choice)
        else:
            line = repeats_line(plan, args.resume)
            if line:
                print(line, file=sys.stderr)
            outcome = _run_with_progress(session, plan, args.resume, choice)
    _say_removed(out_dir, outcome.removed)
    return report(cfg, args, out_dir, outcome)
