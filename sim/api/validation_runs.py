"""The runs of a model validation, each through the one sweep path, and the checks before them.

``sim.validate_model`` (sim/api/validate_model.py) decides which runs a level needs and reports
on them; this runs them: the real grid with the machine measured around every repeat (the
background load, and the speed probe of sim.calibration.speed), then its model twins
under those conditions, on an idle machine and at the real points' speed, and with ``aa``
the real grid again. Before any of it, :func:`check_coverage` refuses a grid the calibration
does not cover, naming the user's config file.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api.validation_conditions import loadavg, read_json, write_conditions
from sim.events import SweepEvents
from sim.rundir.validation_layout import ValidationLayout

if TYPE_CHECKING:  # the sweep and the model load only when a validation runs
    from sim.api.experiments import Experiment
    from sim.calibration.speed import ProbeChildren

__all__ = [
    "check_coverage",
    "run_again",
    "run_all",
    "run_real",
    "run_real_measured",
]

#: Per point index, the readings taken around each of its real repeats.
Readings = dict[int, list[float]]


def check_coverage(exp: Experiment) -> None:
    """CalibrationError (one line) unless ``machine.calibration`` covers every point of the
    model twin of ``exp``: checked before any real point runs (a grid of minutes is not run
    to find that out), naming the user's config file and the field, not the conditions
    file the model runs are later given."""
    from sim.model.calibration import CalibrationError  # the model: only when it is used
    from sim.model.coverage import check_points  # the model: only when it is used

    try:
        check_points(exp.with_overrides(["mode=model"]).points)
    except CalibrationError as exc:
        where = exp.source if exp.source is not None else "the experiment"
        raise CalibrationError(f"{where}: machine.calibration: {exc}") from None


def run_real(
    exp: Experiment,
    where: ValidationLayout,
    force: bool,
    resume: bool,
    events: Any,
    *,
    probe: bool = True,
) -> tuple[Readings, Readings]:
    """The real grid into ``real/``, the background load and (``probe``) the machine's speed
    measured before and after each repeat; returns (loads, speeds) by point index, kept
    from a resumed validation's earlier repeats, and written beside the runs."""
    from sim.model.coverage import point_calibration  # the model: only when it is used
    from sim.rundir.outputs import write_json  # the run directory's code: not at import sim

    loads, speeds = _kept(where.loads, resume), _kept(where.speeds, resume)
    cal = point_calibration(exp.config) if probe else None
    _heading(events, "real runs (real mode)", exp, where.real)
    _run(exp.with_overrides(["mode=real"]), where.real, force, resume, events, loads, cal, speeds)
    write_json(where.loads, {str(k): v for k, v in loads.items()})
    write_json(where.speeds, {str(k): v for k, v in speeds.items()})
    return loads, speeds


def run_real_measured(
    exp: Experiment, where: ValidationLayout, force: bool, resume: bool, events: Any
) -> tuple[Readings, Readings]:
    """:func:`run_real`, with the machine's conditions (wake-up, timer and sleep latencies,
    the background load, the load average) measured before and after it and written with
    the calibration into ``calibration-conditions.json``: what every model run of this
    validation is given, the mechanism's replay included, so that a report made later
    (``--no-run``) replays under the conditions of the real runs, not of whatever
    calibration is current then (7 Dec 2026: a recalibration moved the replay of the same
    real runs from 49 to 44 of 62 points on the GIL wait)."""
    # the measurements: only when they run
    from sim.calibration.measure_harness import measure_conditions
    from sim.model.coverage import point_calibration  # the model: only when it is used

    # A resumed validation keeps what was measured around the real points already run
    # (else the model points would be given conditions measured at another time).
    keep = resume and where.conditions.is_file()
    avg_before, before = loadavg(), measure_conditions()
    loads, speeds = run_real(exp, where, force, resume, events)
    after, avg_after = measure_conditions(), loadavg()
    if not keep:
        cal = point_calibration(exp.config)
        write_conditions(cal, where.conditions, before, after, avg_before, avg_after, events)
    return loads, speeds


def run_all(
    exp: Experiment, where: ValidationLayout, force: bool, resume: bool, events: Any, aa: bool
) -> None:
    """The prediction level's runs: real (with the machine's conditions measured around it),
    model under those conditions at the speed probed beside each real point, model on an
    idle machine as calibrated, model at the real points' own speed; with ``aa`` the real
    grid again, last, so that minutes lie between its two runs."""
    from sim.model.coverage import point_calibration  # the model: only when it is used
    from sim.rundir.outputs import write_json  # the run directory's code: not at import sim
    from sim.rundir.reader import load_results  # the run directory's code: not at import sim
    from sim.validation.paired import speed_scales  # the judgement: only when a validation runs

    cal = point_calibration(exp.config)
    loads, speeds = run_real_measured(exp, where, force, resume, events)
    model = exp.with_overrides(["mode=model", f"machine.calibration={where.conditions}"])
    _heading(events, "model runs (under the conditions measured)", exp, where.model)
    _run(model, where.model, force, resume, events, loads, speeds=speeds)
    idle = ["mode=model", f"machine.calibration={cal.path}", "machine.background_load=0.0"]
    _heading(events, "model runs (idle machine, the calibration's speed)", exp, where.idle)
    _run(exp.with_overrides(idle), where.idle, force, resume, events)
    scales = speed_scales(load_results(where.real), load_results(where.model))
    write_json(where.scales, {",".join(k): v for k, v in scales.items()})
    _heading(events, "model runs (at each real point's own speed)", exp, where.matched)
    _run(model, where.matched, force, resume, events, loads, speeds=speeds, scales=scales)
    if aa:
        run_again(exp, where, force, resume, events)


def run_again(
    exp: Experiment, where: ValidationLayout, force: bool, resume: bool, events: Any
) -> None:
    """The real grid a second time, same seeds, into ``real-again/`` (--aa): the real side
    against itself, by the prediction's targets and the mechanism's."""
    _heading(events, "real runs again (--aa: the real side against itself)", exp, where.again)
    _run(exp.with_overrides(["mode=real"]), where.again, force, resume, events)


def _heading(events: Any, what: str, exp: Experiment, out_dir: Path) -> None:
    """The line above a run's '· point' lines: which run they belong to, and how many."""
    reps = exp.config.repeats
    events.note(
        f"{what} → {out_dir.name}/: {len(exp.points)} points × {reps} repeat"
        f"{'s' if reps != 1 else ''}"
    )


def _kept(path: Path, resume: bool) -> Readings:
    """What a resumed validation measured around its real repeats already run."""
    if not (resume and path.is_file()):
        return {}
    return {int(k): list(v) for k, v in read_json(path).items()}


def _run(
    exp: Experiment,
    out_dir: Path,
    force: bool,
    resume: bool,
    events: Any,
    loads: Readings | None = None,
    cal: Any = None,
    speeds: Readings | None = None,
    scales: dict[tuple[str, ...], float] | None = None,
) -> None:
    """Run the grid of ``exp`` into ``out_dir``. With ``cal`` (real runs) the background load
    and the machine's speed against ``cal`` are measured before and after each point into
    ``loads`` and ``speeds``; without, each point of a model grid is given the mean of what
    ``loads`` holds for it, ``machine.cpu_scale`` the median of its ``speeds``, times its
    ``scales`` entry (by its axis values) when given. A point run again (a later repeat, or
    a resumed run) adds its measurements to those kept."""
    # the measurements: only when they run
    from sim.calibration.measure_harness import measure_background_load
    from sim.calibration.speed import ProbeChildren  # the measurements: only when they run
    from sim.config import Point  # pydantic: not at import sim
    from sim.sweep.session import open_session, plan_run  # the sweep: only when a run is planned

    measure = cal is not None
    failed: set[str] = set()  # variants whose probe could not run (said once each)
    points = list(exp.points)
    if not measure:
        points = [Point(p.index, p.axes, _conditioned(p, loads, speeds, scales)) for p in points]
    plan = plan_run(exp.config, points, out_dir, source=exp.source, overrides=exp.overrides)
    if resume and plan.existing and not plan.difference and not plan.pending:
        return

    children = ProbeChildren()  # the probes' warm children, one a python and variant

    def around(rep: Any) -> None:
        if measure and loads is not None and speeds is not None:
            loads.setdefault(rep.point.index, []).append(measure_background_load())
            speed = _probe(rep.point.config, cal, events, failed, children)
            if speed is not None:
                speeds.setdefault(rep.point.index, []).append(round(speed, 4))

    def started(rep: Any, host: str) -> None:
        around(rep)
        events.started(rep, host)

    def finished(rep: Any, outcome: Any) -> None:
        around(rep)
        events.finished(rep, outcome)

    watch = SweepEvents(started, events.progress, finished, events.note)
    with children, open_session(plan, force=force, resume=resume) as session:
        session.run(plan, watch)


def _probe(
    cfg: Any, cal: Any, events: Any, failed: set[str], children: ProbeChildren
) -> float | None:
    """The machine's speed for ``cfg``'s point (sim.calibration.speed: in a child of the
    point's own interpreter, its plug-ins registered there); None, said once per variant,
    when the probe cannot run."""
    from sim.calibration.speed import speed_ratio  # the measurements: only when they run

    variant = cfg.connector.variant
    try:
        return speed_ratio(cfg, cal, children=children)
    except Exception as exc:  # a probe is a measurement beside the run, never its failure
        if variant not in failed:
            failed.add(variant)
            events.note(f"speed probe of variant {variant!r} failed ({exc}); not scaled")
        return None


def _conditioned(
    point: Any,
    loads: Readings | None,
    speeds: Readings | None,
    scales: dict[tuple[str, ...], float] | None,
) -> Any:
    """The point's model config with its real twin's mean background load, and its
    ``machine.cpu_scale`` times the median speed probed beside the twin and times its
    ``scales`` entry (each only where there is one)."""
    from sim.validation.paired import axis_key  # the judgement: only when a validation runs

    cfg = point.config
    update: dict[str, Any] = {}
    if loads and loads.get(point.index):
        update["background_load"] = round(statistics.fmean(loads[point.index]), 3)
    scale = cfg.machine.cpu_scale
    if speeds and speeds.get(point.index):
        # the median: one probe of 0.25 s can meet a burst of other processes that the
        # point's seconds average out (quickstart at load 11-16: one read 3.18, the rest
        # of that point 0.9-1.1)
        scale *= statistics.median(speeds[point.index])
    if scales is not None:
        scale *= scales.get(axis_key(v for a, v in point.axes.items() if a != "mode"), 1.0)
    if scale != cfg.machine.cpu_scale:
        update["cpu_scale"] = round(scale, 4)
    if not update:
        return cfg
    return cfg.model_copy(update={"machine": cfg.machine.model_copy(update=update)})
