"""Progress of a sweep whose runs execute on several hosts at once (``--executor ray``).

One bar for the sweep (point runs done of those to do) and one line per host:
which point × repeat it is measuring and how many of its requests are done.
A run whose host was lost and that is retried is reported as a line above.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from sim.console import error_console
from sim.events import SweepEvents
from sim.rundir.layout import RepRun
from sim.sweep.executors import ExecutorChoice
from sim.sweep.run_plan import RunPlan
from sim.sweep.runner import RepOutcome

__all__ = ["hosts_display"]


@contextmanager
def hosts_display(plan: RunPlan, resume: bool, choice: ExecutorChoice) -> Iterator[SweepEvents]:
    """A per-host display of ``plan`` run through ``choice`` (an ExecutorChoice), live
    for the block: the events that feed it."""
    err = error_console()
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bar:
        sweep = bar.add_task(f"sweep via {choice.name}", total=len(plan.to_run(resume)))
        yield _HostsDisplay(bar, sweep, plan.requests).events()


class _HostsDisplay:
    """The sweep's events shown as a bar of point runs and a line per host."""

    def __init__(self, bar: Progress, sweep: TaskID, planned: dict[int, int]) -> None:
        self.bar = bar
        self.sweep = sweep
        self.planned = planned
        self.host_task: dict[str, TaskID] = {}
        self.running: dict[tuple[int, int], str] = {}

    def events(self) -> SweepEvents:
        return SweepEvents(self.started, self.progress, self.finished, self.note)

    def started(self, rep: RepRun, host: str) -> None:
        bar = self.bar
        self.running[(rep.point.index, rep.repeat)] = host
        desc = f"  {host}: {rep.label}"
        total = self.planned.get(rep.point.index, 0) or None
        if host not in self.host_task:
            self.host_task[host] = bar.add_task(desc, total=total)
        else:
            bar.reset(self.host_task[host], total=total, description=desc)

    def progress(self, rep: RepRun, done: int, total: int) -> None:
        host = self.running.get((rep.point.index, rep.repeat))
        if host in self.host_task:
            self.bar.update(self.host_task[host], completed=done, total=total)

    def finished(self, rep: RepRun, outcome: RepOutcome | None) -> None:
        if outcome is None:  # an executor's interrupted run: the session does not pass it on
            return
        bar = self.bar
        host = self.running.pop((rep.point.index, rep.repeat), "")
        bar.advance(self.sweep)
        where = f" on {host}" if host else ""
        if outcome.status == "ok":
            bar.console.print(f"[green]✓[/] {rep.label}{where}  ({outcome.elapsed_s:.1f} s)")
        else:
            bar.console.print(f"[red]✗[/] {rep.label}{where}  {outcome.status}: {outcome.error}")
        if host in self.host_task:
            bar.update(self.host_task[host], description=f"  {host}: idle")

    def note(self, text: str) -> None:
        self.bar.console.print(f"[yellow]![/] {text}")
