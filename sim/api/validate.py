"""``sim.validate_model``: run an experiment's grid in both modes and measure the model's error.

The grid runs four times under one directory (default ``results/<name>-validate``),
each through the one sweep path (``sim.sweep.session``): ``real/`` (real mode,
child processes as usual), ``model/`` (model mode, each point given the background
load of other processes measured just before and after its real twin, and the
thread wake-up and timer latencies measured around the real runs: a shared machine
is part of the conditions), ``model-idle/`` (model mode on an idle machine) and
``model-matched/`` (as ``model/``, each point also at the speed its real twin met:
``sim.model.validate.speed_scales``); with ``aa``, ``real-again/`` too (the real
grid once more, same seeds, after the model runs: the real side scored against
itself by the same targets, the noise beside which the model's score is read).
The table pairs every real point with its model twin; ``validation.md`` and
``validation.csv`` are written beside them.
``kvsim validate-model`` parses its arguments, calls :func:`validate_model` and prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api.validate_conditions import loadavg, loadavg_note, read_json, write_conditions
from sim.rundir.validation_layout import TOP_FILES, ValidationLayout

if TYPE_CHECKING:  # the sweep and the model load only when a validation runs
    from sim.api.experiments import Experiment
    from sim.events import SweepEvents

__all__ = ["MIN_REPEATS", "Validation", "validate_model"]

#: Repeats a validation runs at least (interleaved rounds, the requests pooled per point):
#: two real runs of engine_interference minutes apart on a quiet machine agreed with
#: each other on the numpy and rows points' latency p50 within ±10 % at 10/12 points and
#: p99 within ±15 % at 9/12 with one repeat, at 12/12 and 11/12 with three
#: (docs/model-mode.md, Validation): one repeat cannot tell a model error of 10 % from
#: the real side's own noise.
MIN_REPEATS = 3


@dataclass(frozen=True)
class Validation:
    """A model validation: its report and where it lies."""

    #: The directory that holds the four runs and the report.
    out_dir: Path
    #: ``validation.md``: the table, the targets met, the idle and speed-matched lines.
    text: str
    #: The rows of ``validation.csv`` (one per point pair).
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def files(self) -> list[Path]:
        """The report files written."""
        where = ValidationLayout(self.out_dir)
        return [where.report, where.table]


def validate_model(
    exp: Experiment,
    out: str | Path | None = None,
    *,
    force: bool = False,
    resume: bool = False,
    run: bool = True,
    boot: int = 2000,
    repeats: int | None = None,
    aa: bool = False,
    events: SweepEvents | None = None,
) -> Validation:
    """Run ``exp`` in real and model mode (``run=False``: report on finished runs) and
    pair the points; ``boot`` bootstrap resamples give the real values' intervals.
    Both modes run ``repeats`` repeats of each point (None: the config's, at least
    :data:`MIN_REPEATS`), pooled per point.

    ``aa`` runs the real grid a second time into ``real-again/`` and reports it
    against the first as if it were the model (``run=False``: reported when it is not
    older than ``real/``). ``force``/``resume`` apply to each run directory as for
    ``Experiment.run``. ``events`` hears every sweep, and the machine conditions
    measured around the real runs as a note.
    """
    from sim.events import SweepEvents
    from sim.model.validate import validate_runs
    from sim.model.validate_report import again_line, idle_line, matched_line, render
    from sim.rundir.outputs import atomic_write_text, write_csv
    from sim.rundir.reader import load_results

    events = events or SweepEvents()
    wanted = repeats if repeats is not None else max(exp.config.repeats, MIN_REPEATS)
    if wanted != exp.config.repeats:
        exp = exp.with_overrides([f"repeats={wanted}"])
    where = ValidationLayout(Path(out).absolute()) if out else ValidationLayout.default(exp.name)
    base = where.base
    _claim_base(base, force, create=run)
    if run:
        _run_all(exp, where, force, resume, events, aa)
    load_note = ""
    if where.conditions.is_file() and where.loads.is_file():
        per_point = [x for v in read_json(where.loads).values() for x in v]
        load_note = (
            f"Background load on this machine (runnable threads of other processes, measured "
            f"by a fair-share spin test before and after each real point): "
            f"{min(per_point):.1f}–{max(per_point):.1f}. Each model point was given the mean "
            f"of its real twin's two measurements, and the wake-up and timer latencies "
            f"measured around the real runs ({where.conditions.name})."
            f"{loadavg_note(where.conditions)}\n\n"
        )
    real = load_results(where.real)
    pairs = validate_runs(real, load_results(where.model), n_boot=boot)
    text, csv_rows = render(pairs, f"kvsim validate-model · {exp.name}")
    text = text.replace("\n\n", "\n\n" + load_note, 1) if load_note else text
    if where.idle.is_dir():
        text += idle_line(validate_runs(real, load_results(where.idle), n_boot=1))
    if where.matched.is_dir():
        scales_file = where.scales
        scales = list(read_json(scales_file).values()) if scales_file.is_file() else []
        matched = validate_runs(real, load_results(where.matched), n_boot=1)
        text += matched_line(matched, scales)
    if _again_is_current(where, ran=run, aa=aa):
        text += again_line(validate_runs(real, load_results(where.again), n_boot=1))
    if csv_rows:
        write_csv(where.table, list(csv_rows[0]), csv_rows)
    atomic_write_text(where.report, text)
    return Validation(base, text, csv_rows)


def _run_all(
    exp: Experiment, where: ValidationLayout, force: bool, resume: bool, events: Any, aa: bool
) -> None:
    """The four runs: real (with the machine's conditions measured around it), model
    under those conditions, model on an idle machine, model at the real points' speed;
    with ``aa`` the real grid again, last, so that minutes lie between its two runs."""
    from sim.model.coverage import point_calibration
    from sim.model.measure_harness import measure_conditions
    from sim.model.validate import speed_scales
    from sim.rundir.outputs import write_json
    from sim.rundir.reader import load_results

    cal = point_calibration(exp.config)
    where.base.mkdir(parents=True, exist_ok=True)
    cal_file = where.conditions
    # A resumed validation keeps what was measured around the real points already run:
    # their background loads, and the conditions file when there is one (else the model
    # points would be given an empty load and conditions measured at another time).
    loads: dict[int, list[float]] = {}
    if resume and where.loads.is_file():
        loads = {int(k): v for k, v in read_json(where.loads).items()}
    keep_conditions = resume and cal_file.is_file()
    loadavg_before = loadavg()
    before = measure_conditions()
    real = exp.with_overrides(["mode=real"])
    _run(real, where.real, force, resume, events, loads, measure=True)
    after = measure_conditions()
    loadavg_after = loadavg()
    write_json(where.loads, {str(k): v for k, v in loads.items()})
    model = exp.with_overrides(["mode=model", f"machine.calibration={cal_file}"])
    if not keep_conditions:
        write_conditions(cal, cal_file, before, after, loadavg_before, loadavg_after, events)
    _run(model, where.model, force, resume, events, loads)
    idle = ["mode=model", f"machine.calibration={cal.path}", "machine.background_load=0.0"]
    _run(exp.with_overrides(idle), where.idle, force, resume, events)
    scales = speed_scales(load_results(where.real), load_results(where.model))
    write_json(where.scales, {",".join(k): v for k, v in scales.items()})
    _run(model, where.matched, force, resume, events, loads, scales=scales)
    if aa:
        _run(real, where.again, force, resume, events)


def _again_is_current(where: ValidationLayout, ran: bool, aa: bool) -> bool:
    """Whether ``real-again/`` belongs with ``real/``: run now (``aa``), or, reporting only,
    finished no earlier than ``real/`` (a validation run later without --aa left an older
    one beside a newer real run: not its twin)."""
    from sim.rundir.layout import MANIFEST_FILE

    again, real = where.again / MANIFEST_FILE, where.real / MANIFEST_FILE
    if (ran and not aa) or not again.is_file() or not real.is_file():
        return False
    return again.stat().st_mtime >= real.stat().st_mtime


def _run(
    exp: Experiment,
    out_dir: Path,
    force: bool,
    resume: bool,
    events: Any,
    loads: dict[int, list[float]] | None = None,
    measure: bool = False,
    scales: dict[tuple[str, ...], float] | None = None,
) -> None:
    """Run the grid of ``exp`` into ``out_dir``. With ``measure`` the background load
    is measured before and after each point into ``loads``; without, each point of a
    model grid is given the mean of what ``loads`` holds for it, and its
    ``machine.cpu_scale`` from ``scales`` (by its axis values) when given. A point
    run again (a later repeat, or a resumed run) adds its measurements to those kept."""
    from sim.config import Point
    from sim.events import SweepEvents
    from sim.model.measure_harness import measure_background_load
    from sim.sweep.session import open_session, plan_run

    points = list(exp.points)
    if loads is not None and not measure:
        points = [
            Point(p.index, p.axes, _with_load(p.config, sum(loads[p.index]) / len(loads[p.index])))
            if p.index in loads
            else p
            for p in points
        ]
    if scales is not None:
        points = [Point(p.index, p.axes, _with_scale(p, scales)) for p in points]
    plan = plan_run(exp.config, points, out_dir, source=exp.source, overrides=exp.overrides)
    if resume and plan.existing and not plan.difference and not plan.pending:
        return

    def started(rep: Any, host: str) -> None:
        if measure and loads is not None:  # every repeat's pair is kept (the model: mean)
            loads.setdefault(rep.point.index, []).append(measure_background_load())
        events.started(rep, host)

    def finished(rep: Any, outcome: Any) -> None:
        if measure and loads is not None:
            loads[rep.point.index].append(measure_background_load())
        events.finished(rep, outcome)

    watch = SweepEvents(started, events.progress, finished, events.note)
    with open_session(plan, force=force, resume=resume) as session:
        session.run(plan, watch)


def _with_machine(cfg: Any, **update: Any) -> Any:
    """``cfg`` with these ``machine`` fields set (the config objects are frozen)."""
    return cfg.model_copy(update={"machine": cfg.machine.model_copy(update=update)})


def _with_load(cfg: Any, load: float) -> Any:
    return _with_machine(cfg, background_load=round(load, 3))


def _with_scale(point: Any, scales: dict[tuple[str, ...], float]) -> Any:
    """The point's config with ``machine.cpu_scale`` from ``scales`` (unchanged if absent)."""
    from sim.model.validate import axis_key

    key = axis_key(v for a, v in point.axes.items() if a != "mode")
    scale = scales.get(key)
    if scale is None:
        return point.config
    return _with_machine(point.config, cpu_scale=round(scale, 4))


def _claim_base(base: Path, force: bool, create: bool) -> None:
    """Make ``base`` validate-model's own before anything runs: a new or empty directory
    gets kvsim's ledger listing :data:`TOP_FILES` (a later validate-model replaces them);
    in any other directory a file of those names that kvsim did not write is a reason
    to refuse unless ``force`` (``sim.rundir.claim``)."""
    import os

    from sim.errors import RunDirError
    from sim.rundir.claim import claim_outputs
    from sim.rundir.guard import normalize_dir, record_owned
    from sim.rundir.layout import LOCK_FILE

    try:
        if create:
            base.mkdir(parents=True, exist_ok=True)
        empty = base.is_dir() and not [e for e in os.scandir(base) if e.name != LOCK_FILE]
    except OSError as exc:
        raise RunDirError(f"{normalize_dir(base)}: cannot write ({exc.strerror or exc})") from None
    if empty:
        record_owned(base, *TOP_FILES)
    claim_outputs(ValidationLayout(base).top_files(), force)
