"""One sweep from start to end: plan it, prepare its directory, run it, sum up how it ended.

Both ways in use this module: ``kvsim run`` (which only adds a progress bar and
prints) and the Python API (``Experiment.run``). It plans once — the same
:class:`RunPlan` answers a dry run and sizes the progress bar; under the run
directory's lock the states of its point runs are read again (another process
may have changed them), a resume of a different experiment is refused, and the
sweep is told which point runs are already done — and it turns the combined rows
into what a caller wants to know at the end: how many requests failed, the
harness's noise floor, which point runs did not finish and where their logs are.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sim.config import ExperimentConfig, Point
from sim.errors import RunDirError
from sim.rundir.layout import LOG_FILE, RepRun
from sim.sweep.experiment import ExperimentResult, PlannedRun, SweepPlan, plan_sweep

__all__ = [
    "PreparedRun",
    "RunPlan",
    "SweepOutcome",
    "failed_requests",
    "noise_floor_ms",
    "plan_run",
    "prepared_run",
    "run_planned",
    "sweep_outcome",
]


@dataclass(frozen=True)
class RunPlan:
    """What running ``points`` into ``out_dir`` would do; made by reading only."""

    config: ExperimentConfig
    points: list[Point]
    out_dir: Path
    sweep: SweepPlan
    #: Requests each point plans, by point index (a trace replay decides its own count).
    requests: dict[int, int]

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
        if self.existing and self.difference:
            raise RunDirError(
                f"{self.out_dir}: cannot resume, the config changed since this run started "
                f"({self.difference}); restore it, or pass --force to start over"
            )


def plan_run(cfg: ExperimentConfig, points: Sequence[Point], out_dir: Path) -> RunPlan:
    """Plan ``points`` into ``out_dir``: states of earlier runs there, requests per point.

    Model-mode points the calibration does not cover are refused here (ConfigError),
    before anything is written.
    """
    from sim.workload.plan import planned_requests

    if any(p.config.mode == "model" for p in points):
        from sim.model.coverage import check_points

        check_points(points)  # refuse what the calibration does not cover, before anything
    memo: dict[str, Any] = {}  # points that share a trace replay read it once
    counts = {p.index: planned_requests(p.config, memo)[0] for p in points}
    return RunPlan(cfg, list(points), out_dir, plan_sweep(cfg, points, out_dir), counts)


@dataclass(frozen=True)
class PreparedRun:
    """A run directory made ready for a plan, its lock held by this process."""

    #: The plan, its point runs' states read again under the lock.
    plan: RunPlan
    #: The run directory's lock (``sim.rundir.lock``); released when the block ends.
    lock: Any
    #: Stale derived files (compare, figures) a resume removed.
    removed: list[Path]


@contextmanager
def prepared_run(
    plan: RunPlan, *, force: bool = False, resume: bool = False, source: str | Path | None = None
) -> Iterator[PreparedRun]:
    """Make ``plan.out_dir`` ready and hold its lock for the length of the block.

    Refused before anything is touched: a real-store point that cannot fit in
    memory (ConfigError naming ``source``, the config file), a directory another
    kvsim holds, and — checked under the lock — a resume of a directory that holds
    another experiment (RunDirError). A resume that will add points removes
    ``compare*.md``/``figures/`` made from the partial run, so nothing on disk
    contradicts the new ``summary.csv``.
    """
    from sim.rundir.derived import remove_stale_derived
    from sim.rundir.guard import open_run_dir
    from sim.store.memory import check_points

    check_points(str(source) if source is not None else "<python>", plan.points)
    lock = open_run_dir(plan.out_dir, force, resume)
    try:
        removed: list[Path] = []
        if resume:
            plan = replace(plan, sweep=plan_sweep(plan.config, plan.points, plan.out_dir))
            plan.check_resumable()
            if plan.pending:
                removed = remove_stale_derived(plan.out_dir)
        yield PreparedRun(plan, lock, removed)
    finally:
        lock.release()


def noise_floor_ms(rows: Sequence[dict[str, Any]]) -> float:
    """The harness's noise floor (worst p99 over points, ms); NaN when no point measured it."""
    from sim.rundir.reader import as_float

    vals = [as_float(r.get("noise_floor_p99_ms")) for r in rows]
    vals = [v for v in vals if not math.isnan(v)]
    return max(vals) if vals else math.nan


def failed_requests(rows: Sequence[dict[str, Any]]) -> int:
    """Requests that failed, summed over the summary rows."""
    from sim.rundir.reader import as_float

    vals = (as_float(r.get("failed") or 0) for r in rows)
    return sum(int(v) for v in vals if not math.isnan(v))


@dataclass(frozen=True)
class SweepOutcome:
    """How a sweep ended, beyond its tables."""

    result: ExperimentResult
    #: Requests that failed, over all points (their ``error`` column says why).
    failed_requests: int
    #: The harness's noise floor: worst p99 of the noise probe over points, ms (NaN: none).
    noise_floor_p99_ms: float
    #: Point runs that did not finish: (run, state, error); each has a ``stderr.log``.
    unfinished: list[tuple[RepRun, str, str]]

    @property
    def ok(self) -> bool:
        """Every point run finished and completed requests (a point run interrupted by a
        signal to its child leaves no failed row, yet the sweep is not whole)."""
        return not self.result.failed_points and not self.result.incomplete

    @staticmethod
    def log_of(rep: RepRun) -> Path:
        """The point run's captured stderr."""
        return rep.dir / LOG_FILE


def run_planned(
    prepared: PreparedRun,
    *,
    source: str | Path | None = None,
    overrides: Sequence[str] = (),
    resume: bool = False,
    isolate: bool = True,
    child_command: Sequence[str] | None = None,
    on_point_start: Callable[[Point, int], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    on_point_done: Callable[[RepRun, Any], None] | None = None,
    executor: Any = None,
    on_host: Callable[[RepRun, str], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    on_rep_progress: Callable[[RepRun, int, int], None] | None = None,
) -> SweepOutcome:
    """Run a prepared plan (inside :func:`prepared_run`); each point run in a child process.

    ``source`` is the config file (None for a config built in Python), recorded in
    the manifest; ``overrides`` the ``KEY=VALUE`` strings applied to it.
    ``executor`` (a ``sim.sweep.executors.ExecutorChoice``; default: here, one
    run after the other) and the ``on_host`` / ``on_note`` / ``on_rep_progress``
    callbacks are passed to :func:`sim.sweep.experiment.run_experiment`.
    """
    from sim.sweep.experiment import run_experiment

    plan = prepared.plan
    result = run_experiment(
        plan.config,
        plan.points,
        source,
        plan.out_dir,
        on_point_start,
        progress,
        resume=resume,
        isolate=isolate,
        child_command=child_command,
        on_point_done=on_point_done,
        overrides=overrides,
        executor=executor,
        on_host=on_host,
        on_note=on_note,
        on_rep_progress=on_rep_progress,
        lock=prepared.lock,
        plan=plan.sweep if resume else None,
    )
    return sweep_outcome(plan, result)


def sweep_outcome(plan: RunPlan, result: ExperimentResult) -> SweepOutcome:
    """What a caller wants to know of a finished sweep beyond its tables."""
    unfinished = []
    if result.crashed_points or result.incomplete:
        for run in plan_sweep(plan.config, plan.points, plan.out_dir).pending:
            unfinished.append((run.rep, run.state, run.error))
    rows = result.summary_rows
    return SweepOutcome(result, failed_requests(rows), noise_floor_ms(rows), unfinished)
