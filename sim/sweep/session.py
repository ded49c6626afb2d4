"""One sweep from start to end: plan it, prepare its directory, run it, sum up how it ended.

The one path every sweep takes (docs/design.md §5): ``kvsim run`` (which adds a
progress bar and prints), the Python API (``Experiment.run``), ``kvsim search``
(one sweep per round into one directory) and ``kvsim validate-model`` (one
directory per mode). It plans once — the same :class:`RunPlan` answers a dry run
and sizes the progress bar; :func:`open_session` makes the run directory ready
and holds its lock; :meth:`Session.run` reads the states of its point runs again
under the lock (another process may have changed them), refuses a resume of a
different experiment, runs the sweep with the caller's :class:`SweepEvents`, and
turns the combined rows into what a caller wants to know at the end: how many
requests failed, the harness's noise floor, which point runs did not finish and
where their logs are.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sim import columns
from sim.config import ExperimentConfig, Point
from sim.events import SweepEvents
from sim.preflight.machine import check_covered, check_runnable
from sim.rundir.derived import remove_derived_since, remove_stale_derived
from sim.rundir.guard import open_run_dir
from sim.rundir.layout import RepRun
from sim.rundir.lock import RunLock
from sim.rundir.reader import as_float
from sim.sweep import experiment
from sim.sweep.executors import ExecutorChoice
from sim.sweep.experiment import ExperimentResult, plan_sweep
from sim.sweep.identity import DataDigests
from sim.sweep.run_plan import RunPlan
from sim.workload.plan import planned_requests

__all__ = [
    "Session",
    "SweepOutcome",
    "check_points",
    "failed_requests",
    "noise_floor_ms",
    "open_session",
    "plan_run",
    "sweep_outcome",
]


def plan_run(
    cfg: ExperimentConfig,
    points: Sequence[Point],
    out_dir: Path,
    *,
    source: str | Path | None = None,
    overrides: Sequence[str] = (),
) -> RunPlan:
    """Plan ``points`` into ``out_dir``: states of earlier runs there, requests per point.

    ``source`` is the config file (None for a config built in Python), ``overrides``
    the ``KEY=VALUE`` strings applied to it; both are recorded in the manifest.

    Model-mode points the calibration does not cover are refused here (ConfigError),
    before anything is written.
    """
    check_covered(points)  # refuse what the calibration does not cover, before anything
    memo: dict[str, Any] = {}  # points that share a trace replay read it once
    counts = {p.index: planned_requests(p.config, memo)[0] for p in points}
    digests = DataDigests().plan(p.config for p in points)
    sweep = plan_sweep(cfg, points, out_dir, digests)
    path = Path(source) if source is not None else None
    return RunPlan(cfg, list(points), out_dir, sweep, counts, path, tuple(overrides), digests)


class Session:
    """A run directory held by this process (its lock), and the sweeps run into it.

    Made by :func:`open_session`. :meth:`run` is the one way a sweep runs in kvsim:
    ``kvsim run``, the API, ``kvsim search`` (a sweep per round, into one
    directory) and ``kvsim validate-model`` all come through it.
    """

    def __init__(
        self,
        out_dir: Path,
        lock: RunLock,
        *,
        resume: bool,
        isolate: bool,
        child_command: Sequence[str] | None,
    ) -> None:
        self.out_dir = out_dir
        self.lock = lock
        #: The next sweep keeps the point runs already done (a resume, or a later round).
        self.resume = resume
        self.isolate = isolate
        self.child_command = child_command

    def run(
        self,
        plan: RunPlan,
        events: SweepEvents | None = None,
        executor: ExecutorChoice | None = None,
    ) -> SweepOutcome:
        """Run ``plan`` into this directory; each point run in a child process.

        A resume is checked under the lock (the states of its point runs read again;
        a directory that holds another experiment refused with RunDirError), and one
        that will add points removes ``compare*.md``/``figures/`` made from the
        partial run, so nothing on disk contradicts the new ``summary.csv`` (the
        outcome lists them). ``events`` hears what happens, ``executor`` (default:
        here, one run after the other) chooses where point runs execute.
        """
        if plan.out_dir != self.out_dir:
            raise ValueError(f"plan for {plan.out_dir} run in a session of {self.out_dir}")
        check_points(plan)
        removed: list[Path] = []
        began = time.time()
        resume = self.resume
        if resume:
            sweep = plan_sweep(plan.config, plan.points, plan.out_dir, plan.digests)
            plan = replace(plan, sweep=sweep)
            plan.check_resumable()
            if plan.pending:
                removed = remove_stale_derived(plan.out_dir)
        try:
            result = experiment.run_experiment(
                plan.config,
                plan.points,
                plan.source,
                plan.out_dir,
                events,
                resume=resume,
                isolate=self.isolate,
                child_command=self.child_command,
                overrides=plan.overrides,
                executor=executor,
                lock=self.lock,
                plan=plan.sweep if resume else None,
                digests=plan.digests,
            )
        finally:
            # compare.md or figures made while this sweep wrote the run say so, and go
            # with its end (interrupted too): they must not outlive it looking final.
            removed += remove_derived_since(plan.out_dir, began)
        self.resume = True  # a later sweep into this directory keeps what this one did
        return sweep_outcome(plan, result, removed)


def check_points(plan: RunPlan) -> None:
    """Refuse a real-store point that cannot fit in memory, or a real engine on a GPU
    this machine does not have (ConfigError naming the config file), before the run
    directory is touched."""
    check_runnable(str(plan.source) if plan.source is not None else "<python>", plan.points)


@contextmanager
def open_session(
    plan: RunPlan,
    *,
    force: bool = False,
    resume: bool = False,
    isolate: bool = True,
    child_command: Sequence[str] | None = None,
) -> Iterator[Session]:
    """Make ``plan.out_dir`` ready and hold its lock for the length of the block.

    Refused before anything is touched: a point of ``plan`` that cannot run here
    (:func:`check_points`), a directory another kvsim holds or one that is not
    kvsim's (RunDirError). ``force`` replaces a previous run (only the files kvsim
    wrote), ``resume`` keeps its finished point runs. ``isolate=False`` runs points
    in this process (debuggers; a crash then ends the sweep); ``child_command``
    replaces how a child is started (tests).
    """
    check_points(plan)
    lock = open_run_dir(plan.out_dir, force, resume)
    try:
        yield Session(
            plan.out_dir, lock, resume=resume, isolate=isolate, child_command=child_command
        )
    finally:
        lock.release()


def noise_floor_ms(rows: Sequence[dict[str, Any]]) -> float:
    """The harness's noise floor (worst p99 over points, ms); NaN when no point measured it."""
    vals = [as_float(r.get(columns.NOISE_FLOOR_P99_MS.name)) for r in rows]
    vals = [v for v in vals if not math.isnan(v)]
    return max(vals) if vals else math.nan


def failed_requests(rows: Sequence[dict[str, Any]]) -> int:
    """Requests that failed, summed over the summary rows."""
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
    #: Files made from a partial run that a resume removed (compare.md, figures/…).
    removed: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every point run finished and completed requests (a point run interrupted by a
        signal to its child leaves no failed row, yet the sweep is not whole)."""
        return not self.result.failed_points and not self.result.incomplete

    @staticmethod
    def log_of(rep: RepRun) -> Path:
        """The point run's captured stderr."""
        return rep.log


def sweep_outcome(
    plan: RunPlan, result: ExperimentResult, removed: Sequence[Path] = ()
) -> SweepOutcome:
    """What a caller wants to know of a finished sweep beyond its tables."""
    unfinished = []
    if result.crashed_points or result.incomplete:
        for run in plan_sweep(plan.config, plan.points, plan.out_dir, plan.digests).pending:
            unfinished.append((run.rep, run.state, run.error))
    rows = result.summary_rows
    return SweepOutcome(
        result, failed_requests(rows), noise_floor_ms(rows), unfinished, list(removed)
    )
