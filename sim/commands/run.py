"""``kvsim run CONFIG``: run every point (each in its own process), print the comparison.

``--resume`` finishes an interrupted run (finished points are kept); ``--dry-run``
lists the points and what the run directory already holds, running nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sim.commands.plugin_args import add_plugin_argument
from sim.console import output_console

HELP = "run an experiment and print a comparison of its points"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from sim.analysis.condense import MAX_TABLE_ROWS

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


def set_items(args: argparse.Namespace) -> list[str]:
    """The ``--set`` items of a command line, ``--mode`` and ``--audit`` included."""
    items = list(args.set)
    if getattr(args, "mode", None):
        items.append(f"mode={args.mode}")
    if getattr(args, "audit", False):
        items.append("gil.audit=pyspy")
    return items


def interrupt_hint(args: argparse.Namespace) -> str:
    """What to say after Ctrl-C: finished points are kept, and how to finish the run."""
    out = getattr(args, "resolved_out", None)
    if out is None:
        return ""
    import shlex

    from sim.commands.run_report import rerun_command

    cmd = shlex.join(rerun_command(args))
    return f"finished point runs are kept in {out}; `{cmd} --resume` runs the rest"


def check_baseline(baseline: str | None, points: list[Any]) -> None:
    """Refuse a ``--baseline`` that is not among the variants, before any work is done."""
    if baseline is None:
        return
    import difflib

    from sim.errors import UsageError

    variants = list(dict.fromkeys(str(p.axes.get("variant")) for p in points))
    if baseline not in variants:
        close = difflib.get_close_matches(baseline, variants, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(
            f"--baseline {baseline!r}: not a variant this config runs; {hint}"
            f"allowed: {', '.join(variants)}"
        )


def _dry_run(plan: Any) -> int:
    from sim.sweep.plan_view import plan_lines, plan_table

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

    def __init__(self, bar: Any, plan: Any, resume: bool) -> None:
        self.bar = bar
        self.plan = plan
        self.runs = len(plan.to_run(resume))
        self.planned = plan.planned_requests(resume)
        # The bar's task appears with the first point: an error before it (an unusable
        # output directory) then leaves no "starting 0/0 req" line behind.
        self.task: Any = None
        self.n = 0
        self.base = 0
        self.current = 0

    def events(self) -> Any:
        from sim.events import SweepEvents

        return SweepEvents(started=self.started, progress=self.progress, finished=self.finished)

    def started(self, rep: Any, _host: str) -> None:
        bar, point = self.bar, rep.point
        if self.task is None:
            self.task = bar.add_task("starting", total=self.planned)
        self.n += 1
        self.current = self.plan.requests[point.index]
        rep_txt = f" rep {rep.repeat}" if self.plan.config.repeats > 1 else ""
        bar.update(self.task, description=f"[{self.n}/{self.runs}] {point.label}{rep_txt}")

    def progress(self, _rep: Any, done: int, total: int) -> None:
        bar = self.bar
        if total != self.current:
            bar.update(self.task, total=bar.tasks[0].total + total - self.current)
            self.current = total
        bar.update(self.task, completed=self.base + done)

    def finished(self, rep: Any, outcome: Any) -> None:
        bar = self.bar
        self.base += self.current
        bar.update(self.task, completed=self.base)
        if self.runs > _MANY and outcome.status == "ok" and rep.point.config.mode == "model":
            return  # hundreds of lines of milliseconds: the bar says it; failures print
        if outcome.status == "ok":
            bar.console.print(f"[green]✓[/] {rep.label}  ({outcome.elapsed_s:.1f} s)")
        else:
            bar.console.print(f"[red]✗[/] {rep.label}  {outcome.status}: {outcome.error}")


def _run_with_progress(session: Any, plan: Any, resume: bool, choice: Any) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    err = Console(stderr=True)
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


def _say_unvalidated(points: list[Any]) -> None:
    """One line when model-mode points combine features no validation covered."""
    from sim.model.validated import unvalidated_note

    note = unvalidated_note(points)
    if note:
        print(f"kvsim: note: {note}", file=sys.stderr)


def _executor_choice(args: argparse.Namespace) -> Any:
    """The executor chosen on the command line; one-line UsageError when it is not usable."""
    from sim.errors import UsageError
    from sim.sweep.executors import ExecutorChoice, ExecutorError, preflight

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


def main(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    with ExitStack() as plugins:
        return _main(args, plugins)


def _main(args: argparse.Namespace, plugins: Any) -> int:
    from sim.config.plugins import plugin_scope
    from sim.conformance import refuse_wrong_plugin_points
    from sim.preflight import parse_checked
    from sim.rundir.guard import normalize_dir
    from sim.sweep.session import open_session, plan_run

    args.set = set_items(args)  # kept in args.set so that a resume hint repeats them
    cfg, points = parse_checked(args.config, args.set, args.plugin)
    plugins.enter_context(plugin_scope(cfg.plugins))  # their variants, until the command ends
    refuse_wrong_plugin_points(points)  # a plug-in computing wrong addresses is not measured
    check_baseline(args.baseline, points)
    # ``~`` expanded, ``..`` folded (no stray directories), absolute: never ambiguous.
    out_dir = normalize_dir(args.out or cfg.output_dir).absolute()
    # refuses model points the calibration lacks
    plan = plan_run(cfg, points, out_dir, source=Path(args.config), overrides=args.set)
    _say_unvalidated(points)
    if args.dry_run:
        return _dry_run(plan)
    choice = _executor_choice(args)
    isolate = not args.in_process
    with open_session(plan, force=args.force, resume=args.resume, isolate=isolate) as session:
        args.resolved_out = out_dir
        if args.quiet:
            outcome = session.run(plan, None, choice)
        elif choice.name != "local":
            from sim.commands.run_hosts import run_on_hosts

            outcome = run_on_hosts(session, plan, args.resume, choice)
        else:
            from sim.sweep.plan_view import repeats_line

            line = repeats_line(plan, args.resume)
            if line:
                print(line, file=sys.stderr)
            outcome = _run_with_progress(session, plan, args.resume, choice)
    _say_removed(out_dir, outcome.removed)
    from sim.commands.run_report import report

    return report(cfg, args, out_dir, outcome)
