"""Run an experiment: every point × repeat in its own child process, resumable.

The run directory keeps one sub-directory per point run (see ``sim.rundir.layout``);
after each one finishes, the top-level ``requests.csv``, ``summary.csv``,
``summary_repeats.csv``, add-on tables and ``manifest.json`` are rewritten
atomically, so an interrupted sweep leaves consistent files for the points it
finished, and ``resume`` picks up where it stopped — provided the config is the
same experiment (its hash is in the manifest).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.config import ExperimentConfig, Point
from sim.events import RepOutcome, SweepEvents
from sim.process.signals import deferred_signals, sigterm_unwinds
from sim.rundir.combine import Combiner
from sim.rundir.guard import record_owned
from sim.rundir.layout import MANIFEST_FILE, RepRun, in_run_order, rep_runs
from sim.rundir.lock import RunLock
from sim.rundir.manifest import read_manifest
from sim.rundir.rep_files import clear_rep_dir
from sim.rundir.results_json import RESULTS_FILE, write_results_json
from sim.rundir.verify import record_files
from sim.sweep import runner
from sim.sweep.executors import ExecutorChoice, build_executor
from sim.sweep.executors.parallel import ParallelModelExecutor, model_workers
from sim.sweep.hostinfo import host_base
from sim.sweep.identity import DataDigests
from sim.sweep.plan import PlannedRun, SweepPlan, axis_columns, plan_sweep
from sim.sweep.result import ExperimentResult
from sim.sweep.run_manifest import RunManifest
from sim.sweep.runner import run_rep
from sim.sweep.spec import write_spec

#: Least seconds between two rewrites of the top-level tables while model-mode points run.
COMBINE_EVERY_S = 2.0
#: ... and at least this many times what the last rewrite took: the tables grow with
#: every point, so a fixed period would make rewriting them cost more than running
#: the points (quadratic in their number); this keeps it to a few percent.
COMBINE_COST_FACTOR = 20.0

__all__ = [
    "COMBINE_COST_FACTOR",
    "COMBINE_EVERY_S",
    "ExperimentResult",
    "PlannedRun",
    "SweepPlan",
    "axis_columns",
    "plan_sweep",
    "run_experiment",
]


def run_experiment(
    cfg: ExperimentConfig,
    points: Sequence[Point],
    config_path: str | Path | None,
    out_dir: Path,
    events: SweepEvents | None = None,
    *,
    resume: bool = False,
    isolate: bool = True,
    child_command: Sequence[str] | None = None,
    overrides: Sequence[str] = (),
    executor: ExecutorChoice | None = None,
    lock: RunLock | None = None,
    plan: SweepPlan | None = None,
    digests: DataDigests | None = None,
) -> ExperimentResult:
    """Run every unfinished point × repeat; the caller has prepared ``out_dir`` (see rundir).

    ``sim.sweep.session`` is the one caller in kvsim (it locks, pre-checks and
    sums up); tests drive the sweep here directly.
    With ``resume``, runs that finished before are kept and skipped (after checking
    that the config is the same experiment); without it every run is done afresh.
    ``isolate=False`` runs points in this process (debugging; no crash isolation).
    ``child_command`` replaces how a child is started (default: ``sweep.runner.CHILD_COMMAND``).
    ``config_path`` is the file the config came from, recorded in the manifest (``None``
    for a config built in Python): children get the resolved config, not the file.
    ``overrides`` are the ``--set KEY=VALUE`` strings the config was parsed with (recorded
    in the manifest and results.json, so a resume hint can repeat them).
    ``events`` hears what happens (:class:`~sim.events.SweepEvents`);
    ``executor`` chooses where runs execute (default: here, one after the other; see
    ``sim.sweep.executors``).
    ``lock``: the run directory's lock, held by the caller; without it the run takes
    the lock itself (and refuses when another process holds it).
    ``plan`` is the caller's ``plan_sweep`` of this resume, read and checked under
    the lock (``sim.sweep.session``); without it the resume is planned and checked here.
    ``digests``: the data files' hashes read when the sweep was planned (the session's
    plan); without them they are read here, once, before any point runs.
    """
    own = lock is None or not lock.held
    held = RunLock(out_dir).acquire() if own else lock
    try:
        if digests is None:
            digests = DataDigests().plan(p.config for p in points)
        if resume and plan is None:
            plan = plan_sweep(cfg, points, out_dir, digests)
            plan.check_resumable(out_dir)
        source = str(config_path) if config_path is not None else ""
        sweep = _Sweep(
            cfg,
            list(points),
            out_dir,
            source,
            events or SweepEvents(),
            isolate,
            tuple(child_command) if child_command is not None else None,
            digests,
        )
        choice = executor or ExecutorChoice()
        previous = read_manifest(out_dir) if resume else None
        return sweep.run(plan if resume else None, choice, previous, overrides)
    finally:
        if own and held is not None:
            held.release()


@dataclass
class _Rewrites:
    """When the top-level tables were last rewritten, and what that cost.

    Model-mode points take milliseconds: rewriting every top-level table after each
    would cost more than running them, so they are rewritten every COMBINE_EVERY_S,
    or COMBINE_COST_FACTOR times what the last rewrite took, whichever is longer.
    """

    last: float
    cost: float = 0.0
    #: A point run ended since the last rewrite.
    pending: bool = False

    def due(self, fast: bool) -> bool:
        since = time.monotonic() - self.last
        return not fast or since >= max(COMBINE_EVERY_S, COMBINE_COST_FACTOR * self.cost)


class _Sweep:
    """One sweep into a locked run directory: runs its points, keeps its tables current."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        points: list[Point],
        out_dir: Path,
        source: str,
        events: SweepEvents,
        isolate: bool,
        child_command: tuple[str, ...] | None,
        digests: DataDigests,
    ) -> None:
        self.cfg = cfg
        self.points = points
        self.out_dir = out_dir
        self.source = source
        self.events = events
        self.isolate = isolate
        self.child_command = child_command
        self.axes = axis_columns(points)
        self.reps = rep_runs(out_dir, points, cfg.repeats)
        self.combiner = Combiner(out_dir, self.axes, cfg.repeats)
        self.files: dict[str, Any] = {}
        self.skipped = 0
        #: What this process's host is, read once for the points run here.
        self.host: dict[str, Any] | None = None
        self.rewrites = _Rewrites(time.monotonic())
        self.manifest: RunManifest | None = None
        #: The data files' planned hashes; each point's spec carries them (and the
        #: run's config hash), and its child refuses to run when its files differ.
        self.digests = digests
        self.run_hash = ""

    def run(
        self,
        plan: SweepPlan | None,
        choice: ExecutorChoice,
        previous: dict[str, Any] | None,
        overrides: Sequence[str],
    ) -> ExperimentResult:
        if self.child_command is None:
            self.child_command = runner.CHILD_COMMAND
        out_dir, combiner = self.out_dir, self.combiner
        manifest = RunManifest(
            self.cfg,
            self.source,
            self.points,
            out_dir,
            previous,
            overrides,
            choice.name,
            self.digests,
        )
        self.manifest = manifest
        self.run_hash = str(manifest.data["config_hash"])
        finished = {
            (run.rep.point.index, run.rep.repeat)
            for run in (plan.runs if plan is not None else [])
            if run.state == "done"
        }
        for rep in self.reps:
            if (rep.point.index, rep.repeat) in finished and combiner.add(rep) != "done":
                finished.discard((rep.point.index, rep.repeat))
        self.skipped = len(finished)
        todo = in_run_order(
            [r for r in self.reps if (r.point.index, r.repeat) not in finished],
            self.cfg.sweep_order,
            self.cfg.seed,
        )
        record_owned(out_dir, MANIFEST_FILE)
        manifest.write("running", self.counts(), {})
        self.files = combiner.write()
        self.record("running")
        status = "interrupted"
        events = SweepEvents(self.started, self.progress, self.finished, self.note)
        try:
            with sigterm_unwinds():
                self._executor(choice, todo).run(todo, events)
            c = self.counts()
            status = "complete" if c["done"] == c["total"] else "failed"
        finally:
            with deferred_signals():  # a second Ctrl-C must not leave the tables half-updated
                if self.rewrites.pending:
                    self.files = combiner.write()
                self.record(status)
        c = self.counts()
        return ExperimentResult(
            out_dir,
            combiner.summary_rows(),
            combiner.repeat_rows(),
            self.axes,
            self.skipped,
            incomplete=c["total"] - c["done"] - c["failed"],
        )

    def _executor(self, choice: ExecutorChoice, todo: list[RepRun]) -> Any:
        workers = model_workers(todo) if choice.name == "local" and self.isolate else 1
        if workers > 1:
            self.host = host_base()
            self.note(f"{len(todo)} model-mode point runs in {workers} worker processes")
            return ParallelModelExecutor(
                workers,
                self.out_dir,
                self.axes,
                self.source,
                self.host,
                self.run_one,
                (self.digests, self.run_hash),
            )
        return build_executor(choice, self)

    def counts(self) -> dict[str, int]:
        rows = self.combiner.repeat_rows()
        return {
            "total": len(self.reps),
            "done": sum(r["status"] == "ok" for r in rows),
            "failed": sum(r["status"] == "failed" for r in rows),
            "skipped": self.skipped,
        }

    def record(self, status: str) -> None:
        out_dir, manifest = self.out_dir, self.manifest
        assert manifest is not None  # made when the sweep starts
        record_owned(out_dir, RESULTS_FILE)
        manifest.update(status, self.counts(), self.files)
        write_results_json(out_dir, manifest.data, self.combiner.summary_rows(), self.axes)
        files = {**self.files, **record_files(out_dir, [RESULTS_FILE])}
        manifest.write(status, self.counts(), files)

    def run_one(self, rep: RepRun, progress_fn: Callable[[int, int], None] | None) -> RepOutcome:
        if self.host is None and (not self.isolate or rep.point.config.mode == "model"):
            self.host = host_base()
        assert self.child_command is not None
        return run_rep(
            rep,
            self.out_dir,
            self.axes,
            progress_fn,
            source=self.source,
            isolate=self.isolate,
            child_command=self.child_command,
            host=self.host,
            digests=self.digests,
            run_hash=self.run_hash,
        )

    def prepare(self, rep: RepRun) -> Path:
        clear_rep_dir(self.out_dir, rep.dir)
        return write_spec(rep, self.axes, self.source, digests=self.digests, run_hash=self.run_hash)

    def started(self, rep: RepRun, host: str) -> None:
        self.events.started(rep, host)

    def progress(self, rep: RepRun, done: int, total: int) -> None:
        self.events.progress(rep, done, total)

    def finished(self, rep: RepRun, outcome: RepOutcome | None) -> None:
        self.combiner.add(rep)
        self.rewrites.pending = True
        cost = 0.0
        if self.rewrites.due(rep.point.config.mode == "model"):
            began = time.monotonic()
            self.files = self.combiner.write()
            self.rewrites.pending = False
            cost = time.monotonic() - began
        if outcome is not None:
            self.events.finished(rep, outcome)
        if not self.rewrites.pending:
            began = time.monotonic()
            self.record("running")
            self.rewrites.last = time.monotonic()
            self.rewrites.cost = cost + (self.rewrites.last - began)

    def note(self, text: str) -> None:
        if self.manifest is not None:
            self.manifest.note(text)
        self.events.note(text)
