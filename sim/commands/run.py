"""``kvsim run CONFIG``: run every point (each in its own process), print the comparison.

``--resume`` finishes an interrupted run (finished points are kept); ``--dry-run``
lists the points and what the run directory already holds, running nothing. The work
is the library's (``sim.api.run_config``): this parses, calls it and shows the sweep.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
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
from sim.api.run_config import RunArgs, plan_config
from sim.commands.common_args import add_mode_argument, add_plugin_argument, add_set_argument
from sim.commands.interrupt import hint_on_interrupt
from sim.commands.run_hosts import hosts_display
from sim.commands.run_report import report
from sim.console import error_console, output_console
from sim.events import SweepEvents
from sim.rundir.layout import RepRun
from sim.sweep.executors import ExecutorChoice
from sim.sweep.run_plan import RunPlan, plan_lines, plan_table, repeats_line
from sim.sweep.runner import RepOutcome


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


@contextmanager
def _progress(plan: RunPlan, resume: bool) -> Iterator[SweepEvents]:
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} req"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=error_console(),
        transient=False,
    ) as bar:
        yield _ProgressBar(bar, plan, resume).events()


def _say_removed(out_dir: Path, gone: list[Path]) -> None:
    """A resume that adds points removed compare.md and figures/ of the partial run."""
    if gone:
        names = ", ".join(str(p.relative_to(out_dir)) for p in gone)
        print(
            f"note: removed {names} (made from the partial run); run `kvsim compare` / "
            "`kvsim plot` again when the run is complete",
            file=sys.stderr,
        )


def main(cli_args: argparse.Namespace) -> int:
    args = RunArgs.from_cli_args(cli_args)
    with plan_config(args) as planned:
        if planned.unvalidated:
            print(f"kvsim: note: {planned.unvalidated}", file=sys.stderr)
        if args.dry_run:
            return _dry_run(planned.plan)
        choice = planned.executor()
        again = shlex.join(args.rerun_command())
        with hint_on_interrupt(
            f"finished point runs are kept in {planned.out_dir}; `{again} --resume` runs the rest"
        ):
            outcome = planned.run(choice, _display(args, choice)).outcome
        assert outcome is not None  # this process ran it
        _say_removed(planned.out_dir, outcome.removed)
        return report(planned.experiment.config, args, planned.out_dir, outcome)


def _display(
    args: RunArgs, choice: ExecutorChoice
) -> Callable[[RunPlan], AbstractContextManager[SweepEvents | None]]:
    """What shows the sweep while it runs: nothing (``--quiet``), a line per host (Ray),
    else the repeats' cost and one bar of requests."""

    @contextmanager
    def shown(plan: RunPlan) -> Iterator[SweepEvents | None]:
        if args.quiet:
            yield None
        elif choice.name != "local":
            with hosts_display(plan, args.resume, choice) as events:
                yield events
        else:
            line = repeats_line(plan, args.resume)
            if line:
                print(line, file=sys.stderr)
            with _progress(plan, args.resume) as events:
                yield events

    return shown
