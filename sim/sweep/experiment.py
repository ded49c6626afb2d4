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
from pathlib import Path
from typing import Any

from sim.config import ExperimentConfig, Point
from sim.process.signals import deferred_signals, sigterm_unwinds
from sim.rundir.guard import record_owned
from sim.rundir.layout import MANIFEST_FILE, clear_rep_dir, in_run_order
from sim.rundir.lock import RunLock
from sim.rundir.manifest import read_manifest
from sim.rundir.results_json import RESULTS_FILE, write_results_json
from sim.rundir.verify import record_files
from sim.sweep import (
    Combiner,
    RepOutcome,
    RepRun,
    rep_runs,
    run_rep,
)
from sim.sweep.executors import ExecutorChoice, SweepEvents, build_executor
from sim.sweep.executors.parallel import ParallelModelExecutor, model_workers
from sim.sweep.hostinfo import host_base
from sim.sweep.plan import PlannedRun, SweepPlan, axis_columns, check_resumable, plan_sweep
from sim.sweep.result import ExperimentResult
from sim.sweep.run_manifest import RunManifest
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
    "check_resumable",
    "plan_sweep",
    "run_experiment",
]


def run_experiment(
    cfg: ExperimentConfig,
    points: Sequence[Point],
    config_path: str | Path | None,
    out_dir: Path,
    on_point_start: Callable[[Point, int], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    resume: bool = False,
    isolate: bool = True,
    child_command: Sequence[str] | None = None,
    on_point_done: Callable[[RepRun, RepOutcome], None] | None = None,
    overrides: Sequence[str] = (),
    executor: ExecutorChoice | None = None,
    on_host: Callable[[RepRun, str], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    on_rep_progress: Callable[[RepRun, int, int], None] | None = None,
    lock: RunLock | None = None,
    plan: SweepPlan | None = None,
) -> ExperimentResult:
    """Run every unfinished point × repeat; the caller has prepared ``out_dir`` (see rundir).

    With ``resume``, runs that finished before are kept and skipped (after checking
    that the config is the same experiment); without it every run is done afresh.
    ``isolate=False`` runs points in this process (debugging; no crash isolation).
    ``child_command`` replaces how a child is started (default: ``sweep.runner.CHILD_COMMAND``).
    ``config_path`` is the file the config came from, recorded in the manifest (``None``
    for a config built in Python): children get the resolved config, not the file.
    ``overrides`` are the ``--set KEY=VALUE`` strings the config was parsed with (recorded
    in the manifest and results.json, so a resume hint can repeat them).
    ``executor`` chooses where runs execute (default: here, one after the other; see
    ``sim.sweep.executors``); ``on_host`` hears which host each run started on, and
    ``on_note`` what the executor reports besides results (a lost host, a retry);
    ``on_rep_progress`` gets progress with the run it belongs to (runs may overlap).
    ``lock``: the run directory's lock, held by the caller; without it the run takes
    the lock itself (and refuses when another process holds it).
    ``plan`` is the caller's ``plan_sweep`` of this resume, read and checked under
    the lock (``sim.sweep.session``); without it the resume is planned and checked here.
    """
    own = lock is None or not lock.held
    held = RunLock(out_dir).acquire() if own else lock
    try:
        return _run_locked(
            cfg,
            points,
            config_path,
            out_dir,
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
            plan=plan,
        )
    finally:
        if own and held is not None:
            held.release()


def _run_locked(
    cfg: ExperimentConfig,
    points: Sequence[Point],
    config_path: str | Path | None,
    out_dir: Path,
    on_point_start: Callable[[Point, int], None] | None,
    progress: Callable[[int, int], None] | None,
    *,
    resume: bool,
    isolate: bool,
    child_command: Sequence[str] | None,
    on_point_done: Callable[[RepRun, RepOutcome], None] | None,
    overrides: Sequence[str],
    executor: ExecutorChoice | None,
    on_host: Callable[[RepRun, str], None] | None,
    on_note: Callable[[str], None] | None,
    on_rep_progress: Callable[[RepRun, int, int], None] | None,
    plan: SweepPlan | None,
) -> ExperimentResult:
    from sim.sweep import runner

    command = tuple(child_command) if child_command is not None else runner.CHILD_COMMAND
    previous = read_manifest(out_dir) if resume else None
    if resume and plan is None:
        check_resumable(cfg, out_dir)
        plan = plan_sweep(cfg, points, out_dir)
    elif not resume:
        plan = None
    reps = rep_runs(out_dir, list(points), cfg.repeats)
    axes = axis_columns(points)
    source = str(config_path) if config_path is not None else ""
    choice = executor or ExecutorChoice()
    manifest = RunManifest(cfg, source, points, out_dir, previous, overrides, choice.name)
    combiner = Combiner(out_dir, axes, cfg.repeats)
    finished = {
        (run.rep.point.index, run.rep.repeat)
        for run in (plan.runs if plan is not None else [])
        if run.state == "done"
    }
    for rep in reps:
        if (rep.point.index, rep.repeat) in finished and combiner.add(rep) != "done":
            finished.discard((rep.point.index, rep.repeat))
    skipped = len(finished)
    todo = in_run_order(
        [r for r in reps if (r.point.index, r.repeat) not in finished], cfg.sweep_order, cfg.seed
    )

    def counts() -> dict[str, int]:
        rows = combiner.repeat_rows()
        return {
            "total": len(reps),
            "done": sum(r["status"] == "ok" for r in rows),
            "failed": sum(r["status"] == "failed" for r in rows),
            "skipped": skipped,
        }

    def record(status: str) -> None:
        record_owned(out_dir, RESULTS_FILE)
        manifest.update(status, counts(), files)
        write_results_json(out_dir, manifest.data, combiner.summary_rows(), axes)
        manifest.write(status, counts(), {**files, **record_files(out_dir, [RESULTS_FILE])})

    record_owned(out_dir, MANIFEST_FILE)
    manifest.write("running", counts(), {})
    files = combiner.write()
    record("running")
    status = "interrupted"
    # Model-mode points take milliseconds: rewriting every top-level table after each
    # would cost more than running them, so they are rewritten every COMBINE_EVERY_S,
    # or COMBINE_COST_FACTOR times what the last rewrite took, whichever is longer.
    last_write = time.monotonic()
    write_cost = 0.0
    unwritten = False
    host: dict[str, Any] | None = None  # read once, for the points run in this process

    def run_one(rep: RepRun, progress_fn: Callable[[int, int], None] | None) -> RepOutcome:
        nonlocal host
        if host is None and (not isolate or rep.point.config.mode == "model"):
            host = host_base()
        return run_rep(
            rep,
            out_dir,
            axes,
            progress_fn,
            source=source,
            isolate=isolate,
            child_command=command,
            host=host,
        )

    def prepare(rep: RepRun) -> Path:
        clear_rep_dir(out_dir, rep.dir)
        return write_spec(rep, axes, source)

    def started(rep: RepRun, host: str) -> None:
        if on_point_start is not None:
            on_point_start(rep.point, rep.repeat)
        if on_host is not None:
            on_host(rep, host)

    def rep_progress(rep: RepRun, done: int, total: int) -> None:
        if progress is not None:
            progress(done, total)
        if on_rep_progress is not None:
            on_rep_progress(rep, done, total)

    def ended(rep: RepRun, outcome: RepOutcome | None) -> None:
        nonlocal files, last_write, write_cost, unwritten
        combiner.add(rep)
        unwritten = True
        fast = rep.point.config.mode == "model"
        since = time.monotonic() - last_write
        cost = 0.0
        if not fast or since >= max(COMBINE_EVERY_S, COMBINE_COST_FACTOR * write_cost):
            began = time.monotonic()
            files = combiner.write()
            unwritten = False
            cost = time.monotonic() - began
        if outcome is not None and on_point_done is not None:
            on_point_done(rep, outcome)
        if not unwritten:
            began = time.monotonic()
            record("running")
            last_write = time.monotonic()
            write_cost = cost + (last_write - began)

    def note(text: str) -> None:
        manifest.note(text)
        if on_note is not None:
            on_note(text)

    events = SweepEvents(started, rep_progress, ended, note)
    try:
        with sigterm_unwinds():
            workers = model_workers(todo) if choice.name == "local" and isolate else 1
            if workers > 1:
                host = host_base()
                note(f"{len(todo)} model-mode point runs in {workers} worker processes")
                runner_: Any = ParallelModelExecutor(workers, out_dir, axes, source, host, run_one)
            else:
                runner_ = build_executor(choice, run_one, prepare)
            runner_.run(todo, events)
        c = counts()
        status = "complete" if c["done"] == c["total"] else "failed"
    finally:
        with deferred_signals():  # a second Ctrl-C must not leave the tables half-updated
            if unwritten:
                files = combiner.write()
            record(status)
    c = counts()
    return ExperimentResult(
        out_dir,
        combiner.summary_rows(),
        combiner.repeat_rows(),
        axes,
        skipped,
        incomplete=c["total"] - c["done"] - c["failed"],
    )
