"""A run plan: what running points into a directory would do, made by reading only
(sim.sweep.session.plan_run makes it), and how ``kvsim run --dry-run`` prints it: one
row per point run, then what a run would do. ``print(plan)`` gives the same text."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.config import ExperimentConfig, Point
from sim.console import pipe_console
from sim.preflight.budget import estimate_point, human_seconds
from sim.rundir.layout import in_run_order
from sim.rundir.state import run_state_note
from sim.sweep.experiment import PlannedRun, SweepPlan
from sim.sweep.identity import DataDigests

__all__ = ["RunPlan", "plan_lines", "plan_table", "plan_text", "repeats_line", "runs_in_order"]


@dataclass(frozen=True)
class RunPlan:
    """What running ``points`` into ``out_dir`` would do; made by reading only."""

    config: ExperimentConfig
    points: list[Point]
    out_dir: Path
    sweep: SweepPlan
    #: Requests each point plans, by point index (a trace replay decides its own count).
    requests: dict[int, int]
    #: The config file (None: built in Python), recorded in the manifest.
    source: Path | None = None
    #: The ``KEY=VALUE`` overrides the config was parsed with (a resume hint repeats them).
    overrides: tuple[str, ...] = ()
    #: The data files' content hashes, read once at planning: the manifest, the specs
    #: and a resume use them, and each point's child checks its files against them.
    digests: DataDigests = field(default_factory=DataDigests)

    def __str__(self) -> str:
        """The table ``kvsim run --dry-run`` prints, and what a run would do."""
        return plan_text(self)

    def __repr__(self) -> str:
        return (
            f"<RunPlan {self.config.name!r} into {str(self.out_dir)!r}: "
            f"{len(self.runs)} point run(s), {len(self.pending)} to do>"
        )

    @property
    def runs(self) -> list[PlannedRun]:
        """Every point × repeat, with its state: done, failed, interrupted or pending."""
        return self.sweep.runs

    @property
    def pending(self) -> list[PlannedRun]:
        """The point runs a resume would run (all but those already done)."""
        return self.sweep.pending

    @property
    def existing(self) -> bool:
        """``out_dir`` already holds a kvsim run."""
        return self.sweep.existing

    @property
    def difference(self) -> str:
        """Where the run in ``out_dir`` differs from this config ("" when it is the same)."""
        return self.sweep.difference

    def to_run(self, resume: bool) -> list[PlannedRun]:
        """The point runs a run (``resume``: a resume) would start, in order."""
        return self.pending if resume else self.runs

    def planned_requests(self, resume: bool) -> int:
        """Requests the point runs of :meth:`to_run` plan in all."""
        return sum(self.requests[r.rep.point.index] for r in self.to_run(resume))

    def check_resumable(self) -> None:
        """RunDirError when ``out_dir`` holds a run of a different experiment."""
        self.sweep.check_resumable(self.out_dir)


_COLOUR = {
    "done": "green",
    "failed": "red",
    "interrupted": "yellow",
    "damaged": "red",
    "pending": "default",
}


def runs_in_order(plan: RunPlan) -> list[Any]:
    """The plan's point runs in the order a run makes them (``sweep.order``: interleaved
    rounds, each shuffled; or the grid's), done ones where they stood: a resume keeps
    the relative order of what is left (sim.rundir.layout.in_run_order)."""
    by_rep = {(r.rep.point.index, r.rep.repeat): r for r in plan.runs}
    ordered = in_run_order([r.rep for r in plan.runs], plan.config.sweep_order, plan.config.seed)
    return [by_rep[(rep.point.index, rep.repeat)] for rep in ordered]


def plan_table(plan: RunPlan) -> Any:
    """The rich table: #, point, repeat, requests, state (with the error of a failed run),
    a row per point run in the order they run."""
    from rich import box  # rich loads only when a plan is shown
    from rich.table import Table  # rich loads only when a plan is shown

    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"kvsim · {plan.config.name} · {plan.out_dir}",
        title_justify="left",
    )
    widest = max((len(p.label) for p in plan.points), default=5)
    for col in ("#", "point", "repeat", "requests", "state"):
        table.add_column(
            col,
            justify="right" if col in ("#", "repeat", "requests") else "left",
            min_width=widest if col == "point" else None,
            no_wrap=col != "state",
        )
    for run in runs_in_order(plan):
        state = f"[{_COLOUR[run.state]}]{run.state}[/]"
        if run.error:
            state += f" ({run.error})"
        table.add_row(
            str(run.rep.point.index),
            run.rep.point.label,
            str(run.rep.repeat),
            str(plan.requests[run.rep.point.index]),
            state,
        )
    return table


def plan_lines(plan: RunPlan) -> list[str]:
    """What follows the table: the directory's state, and what a run or resume would do."""
    out_dir, todo = plan.out_dir, len(plan.pending)
    lines = [note] if (note := run_state_note(out_dir)) else []
    if plan.existing and plan.difference:
        lines.append(
            f"{out_dir} holds a run of a different config ({plan.difference}): "
            "--resume would refuse; --force replaces it"
        )
    elif plan.existing and not todo:
        lines.append(f"all {len(plan.runs)} point run(s) are done in {out_dir}")
    elif plan.existing:
        lines.append(
            f"{todo} of {len(plan.runs)} point run(s) to do in {out_dir}; "
            "`--resume` runs only those"
        )
    else:
        lines.append(f"{todo} point run(s) to do; nothing has run in {out_dir} yet")
    extra = repeats_line(plan, plan.existing)
    if extra and plan.pending:
        lines.append(extra)
    return lines


def repeats_line(plan: Any, resume: bool) -> str | None:
    """What the repeats add to the run's expected time (real-mode points), said before
    it starts: a verdict needs them (docs/statistics.md), and they cost wall time."""
    cfg = plan.config
    todo = plan.to_run(resume)
    real = [r for r in todo if r.rep.point.config.mode != "model"]
    if cfg.repeats < 2 or not real:
        return None
    each = {
        p.index: estimate_point(p.config, plan.requests[p.index]).expected_s for p in plan.points
    }
    total = sum(each[r.rep.point.index] for r in real)
    extra = sum(each[r.rep.point.index] for r in real if r.rep.repeat > 0)
    return (
        f"{cfg.repeats} repeats a point, in {cfg.sweep_order} order: ≈ {human_seconds(total)} "
        f"in all, of which the repeats beyond the first add ≈ {human_seconds(extra)} "
        "(they give compare its intervals; docs/statistics.md)"
    )


def plan_text(plan: RunPlan) -> str:
    """The table and the lines as plain text, as ``kvsim run --dry-run | cat`` prints them."""
    buf = io.StringIO()
    console = pipe_console(buf)
    console.print(plan_table(plan))
    for line in plan_lines(plan):
        console.print(line, markup=False)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()).strip("\n")
