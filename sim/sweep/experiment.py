"""Run an experiment: every point × repeat in its own child process, resumable.

The run directory keeps one sub-directory per point run (see ``sim.rundir.layout``);
after each one finishes, the top-level ``requests.csv``, ``summary.csv``,
``summary_repeats.csv``, add-on tables and ``manifest.json`` are rewritten
atomically, so an interrupted sweep leaves consistent files for the points it
finished, and ``resume`` picks up where it stopped — provided the config is the
same experiment (its hash is in the manifest).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.config import ExperimentConfig, Point
from sim.rundir.guard import RunDirError, owned_files, record_owned
from sim.rundir.layout import MANIFEST_FILE, clear_rep_dir, verify_rep
from sim.rundir.lock import RunLock
from sim.rundir.manifest import MANIFEST_TOOL, machine_info, read_manifest, write_manifest
from sim.rundir.results_json import RESULTS_FILE, write_results_json
from sim.rundir.verify import record_files
from sim.sweep import (
    Combiner,
    RepOutcome,
    RepRun,
    config_hash,
    config_identity,
    first_difference,
    rep_runs,
    run_rep,
)
from sim.sweep.executors import ExecutorChoice, SweepEvents, build_executor
from sim.sweep.signals import deferred_signals
from sim.sweep.spec import write_spec

#: Seconds between two rewrites of the top-level tables while model-mode points run.
COMBINE_EVERY_S = 2.0

__all__ = [
    "COMBINE_EVERY_S",
    "ExperimentResult",
    "PlannedRun",
    "SweepPlan",
    "axis_columns",
    "check_resumable",
    "plan_sweep",
    "run_experiment",
]


def axis_columns(points: Sequence[Point]) -> list[str]:
    cols: list[str] = []
    for p in points:
        for k in p.axes:
            if k not in cols:
                cols.append(k)
    return cols


@dataclass(frozen=True)
class PlannedRun:
    """A point run and what the run directory already says about it."""

    rep: RepRun
    #: "done" (finished and verified), "failed", "interrupted", "damaged" (finished, but
    #: a file it wrote is missing or changed: the error says which) or "pending".
    state: str
    error: str = ""


@dataclass(frozen=True)
class SweepPlan:
    runs: list[PlannedRun]
    #: The run directory already holds a kvsim run.
    existing: bool
    #: Where the existing run's config differs from this one ("" when it is the same).
    difference: str

    @property
    def pending(self) -> list[PlannedRun]:
        return [r for r in self.runs if r.state != "done"]


class ExperimentResult:
    def __init__(
        self,
        out_dir: Path,
        rows: list[dict[str, Any]],
        repeat_rows: list[dict[str, Any]],
        axes: list[str],
        skipped: int = 0,
    ) -> None:
        self.out_dir = out_dir
        #: One row per point, aggregated over repeats (the rows of summary.csv).
        self.summary_rows = rows
        #: One row per point × repeat (the rows of summary_repeats.csv).
        self.repeat_rows = repeat_rows
        self.axes = axes
        #: Point runs found finished and not run again (resume).
        self.skipped = skipped

    @property
    def crashed_points(self) -> list[dict[str, Any]]:
        """Points with at least one repeat that did not finish (status failed or partial)."""
        return [r for r in self.summary_rows if r.get("status") != "ok"]

    @property
    def empty_points(self) -> list[dict[str, Any]]:
        """Points that finished but completed no request."""
        return [r for r in self.summary_rows if r.get("status") == "ok" and not r.get("ok")]

    @property
    def failed_points(self) -> list[dict[str, Any]]:
        return [*self.crashed_points, *self.empty_points]


def _difference(cfg: ExperimentConfig, manifest: dict[str, Any]) -> str:
    if manifest.get("config_hash") == config_hash(cfg):
        return ""
    old = manifest.get("config")
    if not isinstance(old, dict) or "config_hash" not in manifest:
        return "the run records no config hash (made by an older kvsim)"
    return first_difference(old, config_identity(cfg)) or "resolved config hash differs"


def plan_sweep(cfg: ExperimentConfig, points: Sequence[Point], out_dir: Path) -> SweepPlan:
    """Every point run and its state in ``out_dir``; reads only, never writes."""
    manifest = read_manifest(out_dir)
    difference = _difference(cfg, manifest) if manifest is not None else ""
    runs = []
    for rep in rep_runs(out_dir, list(points), cfg.repeats):
        if manifest is None or difference:
            runs.append(PlannedRun(rep, "pending"))
        else:
            state, why = verify_rep(rep.dir)
            runs.append(PlannedRun(rep, state, why))
    return SweepPlan(runs, manifest is not None, difference)


def check_resumable(cfg: ExperimentConfig, out_dir: Path) -> None:
    """Raise RunDirError when ``out_dir`` holds a run of a different experiment."""
    manifest = read_manifest(out_dir)
    if manifest is None:
        return
    diff = _difference(cfg, manifest)
    if diff:
        raise RunDirError(
            f"{out_dir}: cannot resume, the config changed since this run started ({diff}); "
            "restore it, or pass --force to start over"
        )


class _Manifest:
    """manifest.json of this run, kept across resumed sessions."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        source: str,
        points: Sequence[Point],
        out_dir: Path,
        previous: dict[str, Any] | None,
        overrides: Sequence[str] = (),
        executor: str = "local",
    ) -> None:
        self._dir = out_dir
        self._started = time.time()
        prev = previous or {}
        self._data: dict[str, Any] = {
            "tool": MANIFEST_TOOL,
            "status": "running",
            "config_path": source,
            "overrides": list(overrides),
            "config": config_identity(cfg),
            "config_hash": config_hash(cfg),
            "seed": cfg.seed,
            "switch_interval_ms": cfg.gil.switch_interval_ms,
            "repeats": cfg.repeats,
            "axes": axis_columns(points),
            "points": [
                {"index": p.index, "slug": p.slug, "axes": p.axes, "label": p.label} for p in points
            ],
            "started_unix": prev.get("started_unix", self._started),
            "elapsed_s": 0.0,
            "sessions": list(prev.get("sessions", [])),
            "runs": {},
            "files": list(prev.get("files", [])),
            "machine": machine_info(),
        }
        if any(p.config.mode == "model" for p in points):
            from sim.model.coverage import check_points

            self._data["calibration"] = [c.manifest_entry() for c in check_points(points).values()]
        self._data["sessions"].append(
            {"started_unix": self._started, "status": "running", "executor": executor}
        )

    def note(self, text: str) -> None:
        """Keep an executor's report (a lost host, a retry) in this session's entry."""
        self._data["sessions"][-1].setdefault("notes", []).append(text)

    def write(self, status: str, runs: dict[str, int], tables: dict[str, Any]) -> None:
        """Rewrite manifest.json: status, counts, kvsim's files and the tables' checksums."""
        self.update(status, runs, tables)
        write_manifest(self._dir, self._data)

    def update(self, status: str, runs: dict[str, int], tables: dict[str, Any]) -> None:
        now = time.time()
        self._data["status"] = status
        self._data["runs"] = runs
        self._data["files"] = sorted({*owned_files(self._dir), *tables})
        self._data["tables"] = tables
        self._data["elapsed_s"] = sum(
            s.get("elapsed_s", 0.0) for s in self._data["sessions"][:-1]
        ) + (now - self._started)
        self._data["sessions"][-1].update(status=status, elapsed_s=now - self._started)

    @property
    def data(self) -> dict[str, Any]:
        return self._data


class _Terminated(SystemExit):
    """SIGTERM during a sweep: unwinds like Ctrl-C (child stopped, files kept), exit 143."""


@contextmanager
def _sigterm_unwinds() -> Generator[None, None, None]:
    """Turn SIGTERM into an exception while the sweep runs, unless someone else handles it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise _Terminated(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
    manifest = _Manifest(cfg, source, points, out_dir, previous, overrides, choice.name)
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
    todo = [r for r in reps if (r.point.index, r.repeat) not in finished]

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
    # would cost more than running them, so they are rewritten every COMBINE_EVERY_S.
    last_write = time.monotonic()
    unwritten = False

    def run_one(rep: RepRun, progress_fn: Callable[[int, int], None] | None) -> RepOutcome:
        return run_rep(
            rep,
            out_dir,
            axes,
            progress_fn,
            source=source,
            isolate=isolate,
            child_command=command,
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
        nonlocal files, last_write, unwritten
        combiner.add(rep)
        unwritten = True
        fast = rep.point.config.mode == "model"
        if not fast or time.monotonic() - last_write >= COMBINE_EVERY_S:
            files = combiner.write()
            last_write, unwritten = time.monotonic(), False
        if outcome is not None and on_point_done is not None:
            on_point_done(rep, outcome)
        if not unwritten:
            record("running")

    def note(text: str) -> None:
        manifest.note(text)
        if on_note is not None:
            on_note(text)

    events = SweepEvents(started, rep_progress, ended, note)
    try:
        with _sigterm_unwinds():
            build_executor(choice, run_one, prepare).run(todo, events)
        c = counts()
        status = "complete" if c["done"] == c["total"] else "failed"
    finally:
        with deferred_signals():  # a second Ctrl-C must not leave the tables half-updated
            if unwritten:
                files = combiner.write()
            record(status)
    return ExperimentResult(out_dir, combiner.summary_rows(), combiner.repeat_rows(), axes, skipped)
