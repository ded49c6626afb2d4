"""``sim.validate_model``: run an experiment's grid in both modes and measure the model's error.

The grid runs four times under one directory (default ``results/<name>-validate``),
each through the one sweep path (``sim.sweep.session``): ``real/`` (real mode,
child processes as usual), ``model/`` (model mode, each point given the background
load of other processes measured just before and after its real twin, and the
thread wake-up and timer latencies measured around the real runs: a shared machine
is part of the conditions), ``model-idle/`` (model mode on an idle machine) and
``model-matched/`` (as ``model/``, each point also at the speed its real twin met:
``sim.validation.paired.speed_scales``); with ``aa``, ``real-again/`` too (the real
grid once more, same seeds, after the model runs: the real side scored against
itself by the same targets, the noise beside which the model's score is read).
The table pairs every real point with its model twin; ``validation.md`` and
``validation.csv`` are written beside them.
``kvsim validate-model`` parses its arguments, calls :func:`validate_model` and prints.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api.cli_args import namespace_fields, set_items
from sim.api.validation_conditions import loadavg_note, read_json
from sim.errors import ConfigError, RunDirError
from sim.events import SweepEvents
from sim.rundir.validation_layout import TOP_FILES, ValidationLayout

if TYPE_CHECKING:  # the sweep and the model load only when a validation runs
    import argparse

    from sim.api.experiments import Experiment

__all__ = ["LEVELS", "MIN_REPEATS", "ValidateModelArgs", "Validation", "validate_model"]

#: What validate-model judges: the calibrated model's prediction (beside the real side's
#: own repeatability), the mechanism (the real runs' own service times replayed through
#: the model's queue, GIL and store), or both.
LEVELS = ("prediction", "mechanism", "both")

#: Repeats a validation runs at least (interleaved rounds, the requests pooled per point):
#: two real runs of engine_interference minutes apart on a quiet machine agreed with
#: each other on the numpy and rows points' latency p50 within ±10 % at 10/12 points and
#: p99 within ±15 % at 9/12 with one repeat, at 12/12 and 11/12 with three
#: (docs/model-mode.md, Validation): one repeat cannot tell a model error of 10 % from
#: the real side's own noise.
MIN_REPEATS = 3


@dataclass(frozen=True)
class ValidateModelArgs:
    """What ``kvsim validate-model`` was asked (the flags of
    sim.commands.validate_model.add_arguments; ``run`` is ``not --no-run``):
    ``validate_model(load(args.config, args.sets), args.out, force=args.force, …)``."""

    config: str
    #: ``--set`` items with ``--audit`` as one of them (both modes are run)
    sets: tuple[str, ...]
    out: str | None
    force: bool
    resume: bool
    run: bool
    boot: int
    repeats: int | None
    aa: bool
    level: str

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> ValidateModelArgs:
        return cls(**namespace_fields(cls, args, sets=set_items(args), run=not args.no_run))


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
        return [where.report, where.table] if self.rows else [where.report]  # mechanism only


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
    level: str = "both",
    events: SweepEvents | None = None,
) -> Validation:
    """Run ``exp`` in real and model mode (``run=False``: report on finished runs) and
    pair the points; ``boot`` bootstrap resamples give the real values' intervals.
    Both modes run ``repeats`` repeats of each point (None: the config's, at least
    :data:`MIN_REPEATS`), pooled per point. ``level`` is one of :data:`LEVELS`.

    ``aa`` runs the real grid a second time into ``real-again/`` and reports it
    against the first as if it were the model (``run=False``: reported when it is not
    older than ``real/``); the prediction level's verdict reads each point's error beside
    it (sim.validation.verdict). ``force``/``resume`` apply to each run directory as
    for ``Experiment.run``. ``events`` hears every sweep, and the machine conditions
    measured around the real runs as a note. A grid the calibration does not cover is
    refused before anything runs (CalibrationError naming the config file).
    """
    from sim.api.validation_runs import (  # heavy: only a validation
        check_coverage,
        run_again,
        run_all,
        run_real_measured,
    )
    from sim.rundir.outputs import atomic_write_text, write_csv  # heavy: only a validation loads it
    from sim.validation.table import wrap  # heavy: only a validation loads it

    if level not in LEVELS:
        raise ConfigError(f"--level {level!r}: allowed: {', '.join(LEVELS)}")
    events = events or SweepEvents()
    wanted = repeats if repeats is not None else max(exp.config.repeats, MIN_REPEATS)
    if wanted != exp.config.repeats:
        exp = exp.with_overrides([f"repeats={wanted}"])
    where = ValidationLayout(Path(out).absolute()) if out else ValidationLayout.default(exp.name)
    if run:
        check_coverage(exp)  # before the directory is claimed or any point runs
    _claim_base(where.base, force, create=run)
    predict = level in ("prediction", "both")
    if run and predict:
        run_all(exp, where, force, resume, events, aa)
    elif run:
        run_real_measured(exp, where, force, resume, events)
        if aa:
            run_again(exp, where, force, resume, events)
    head = f"# kvsim validate-model · {exp.name}\n\n"
    again = _again_is_current(where, ran=run, aa=aa)
    mechanism = _mechanism(exp, where, level, again) if level in ("mechanism", "both") else ""
    text, full, csv_rows = _prediction(exp, where, boot, run, aa) if predict else ("", "", [])
    if csv_rows:
        write_csv(where.table, list(csv_rows[0]), csv_rows)
    report = head + mechanism + text
    atomic_write_text(where.report, report + full)
    return Validation(where.base, wrap(report), csv_rows)


def _prediction(
    exp: Experiment, where: ValidationLayout, boot: int, ran: bool, aa: bool
) -> tuple[str, str, list[dict[str, Any]]]:
    """The prediction level: its table and verdict, the conditions and second runs' lines
    (what is printed), the full table of every metric (validation.md only) and the CSV
    rows."""
    from sim.calibration.speed import speed_line  # heavy: only a validation loads it
    from sim.rundir.reader import load_results  # heavy: only a validation loads it
    from sim.validation.paired import (  # heavy: only a validation
        TARGETS,
        summary_counts,
        validate_runs,
    )
    from sim.validation.report import (  # heavy: only a validation loads it
        again_line,
        idle_line,
        matched_line,
        metric_lines,
        noise_line,
        render,
        shown_metrics,
    )
    from sim.validation.table import prediction_table  # heavy: only a validation loads it
    from sim.validation.verdict import judge  # heavy: only a validation loads it

    real = load_results(where.real)
    pairs = validate_runs(real, load_results(where.model), n_boot=boot)
    again = None
    if _again_is_current(where, ran=ran, aa=aa):
        again = validate_runs(real, load_results(where.again), n_boot=1)
    title = "Prediction: the calibrated model (model/) against the real runs (real/)"
    judged = judge(pairs, again)
    parts = [prediction_table(pairs, judged, title), "", "Conditions:"]
    if where.conditions.is_file() and where.loads.is_file():
        per_point = [x for v in read_json(where.loads).values() for x in v]
        parts.append(
            f"- background load on this machine (runnable threads of other processes, "
            f"measured by a fair-share spin test before and after each real point): "
            f"{min(per_point):.1f}–{max(per_point):.1f}. Each model point was given the mean "
            f"of its real twin's measurements, and the wake-up and timer latencies "
            f"measured around the real runs ({where.conditions.name})."
            f"{loadavg_note(where.conditions)}"
        )
    if where.speeds.is_file():
        parts.append(speed_line(read_json(where.speeds)).rstrip())
    parts += ["", "The same real runs against other runs:"]
    if where.idle.is_dir():
        parts.append(idle_line(validate_runs(real, load_results(where.idle), n_boot=1)).rstrip())
    if where.matched.is_dir():
        scales = list(read_json(where.scales).values()) if where.scales.is_file() else []
        matched = validate_runs(real, load_results(where.matched), n_boot=1)
        parts.append(matched_line(matched, scales).rstrip())
    if again is not None:
        parts.append(again_line(again).rstrip())
    if pairs:
        parts += ["", "Every metric of model/ against its target:", *metric_lines(pairs)]
        names = [n for n in shown_metrics(pairs) if n in TARGETS]
        parts.append(noise_line(summary_counts(pairs), names))
    full, csv_rows = render(pairs, "Every metric, per point: model/ against real/")
    for row, j in zip(csv_rows, judged, strict=True):  # the verdict's columns beside each pair
        for m in j.rules:
            row[f"{m}_again_error"] = j.again[m]
            row[f"{m}_rule"] = j.rules[m]
    return "\n".join(parts) + "\n", "\n#" + full, csv_rows


def _mechanism(exp: Experiment, where: ValidationLayout, level: str, again: bool) -> str:
    """The mechanism level: the real runs' own service times (each request's GIL hold, the
    engine's build) replayed through the model's queue, GIL, cores and store
    (sim.model.replay), each point under the background load measured around its real
    twin and the harness latencies measured around the real runs when they were; with
    ``again`` (real-again/ belongs with real/), the real side against itself by the
    same targets, which the verdict reads."""

    from sim.api.replay import repeat_run, replay_run  # heavy: only a validation loads it
    from sim.calibration.speed import speed_line  # heavy: only a validation loads it
    from sim.model.calibration import load_calibration  # heavy: only a validation loads it
    from sim.model.replay import MECHANISM_TARGETS  # heavy: only a validation loads it
    from sim.validation.table import mechanism_table  # heavy: only a validation loads it

    cal = load_calibration(where.conditions) if where.conditions.is_file() else None
    loads = read_json(where.loads) if where.loads.is_file() else {}
    slugs = {str(p.index): p.slug for p in exp.with_overrides(["mode=real"]).points}
    background = {slugs[k]: statistics.fmean(v) for k, v in loads.items() if k in slugs and v}
    points = replay_run(where.real, calibration=cal, background=background)
    title = "Mechanism: the real runs' measured holds replayed through the model (real/)"
    repeated = repeat_run(points, where.again) if again else None
    text = mechanism_table(points, MECHANISM_TARGETS, title, again=repeated)
    if repeated is not None:
        title = "Mechanism: the real side against itself (real-again/ against real/)"
        text += "\n" + mechanism_table(repeated, MECHANISM_TARGETS, title)
    text += _latencies_line(where, measured=cal is not None)
    if level == "mechanism" and where.speeds.is_file():  # else the prediction's says it
        text += speed_line(read_json(where.speeds), scaled=False)
    return text + "\n"


def _latencies_line(where: ValidationLayout, measured: bool) -> str:
    """Whose OS latencies (wake-ups, timers, sleeps) the replay ran with: not replayed from
    the records, they move the replay's GIL wait, so a report says whether they were
    measured around its real runs or are the current calibration's (a validation made
    before 7 Dec 2026 did not measure them at the mechanism level)."""
    if measured:
        return (
            "- the OS's wake-up, timer and sleep latencies: measured around the real runs "
            f"({where.conditions.name}).{loadavg_note(where.conditions)}\n"
        )
    return (
        "- the OS's wake-up, timer and sleep latencies: each point's machine.calibration as it "
        "is now, not measured around these real runs; rerun the validation to measure them "
        "(a recalibration since moves this replay).\n"
    )


def _again_is_current(where: ValidationLayout, ran: bool, aa: bool) -> bool:
    """Whether ``real-again/`` belongs with ``real/``: run now (``aa``), or, reporting only,
    finished no earlier than ``real/`` (a validation run later without --aa left an older
    one beside a newer real run: not its twin)."""
    from sim.rundir.layout import MANIFEST_FILE  # heavy: only a validation loads it

    again, real = where.again / MANIFEST_FILE, where.real / MANIFEST_FILE
    if (ran and not aa) or not again.is_file() or not real.is_file():
        return False
    return again.stat().st_mtime >= real.stat().st_mtime


def _claim_base(base: Path, force: bool, create: bool) -> None:
    """Make ``base`` validate-model's own before anything runs: a new or empty directory
    gets kvsim's ledger listing :data:`TOP_FILES` (a later validate-model replaces them);
    in any other directory a file of those names that kvsim did not write is a reason
    to refuse unless ``force`` (``sim.rundir.claim``)."""

    from sim.rundir.claim import claim_outputs  # heavy: only a validation loads it
    from sim.rundir.guard import normalize_dir, record_owned  # heavy: only a validation loads it
    from sim.rundir.layout import LOCK_FILE  # heavy: only a validation loads it

    try:
        if create:
            base.mkdir(parents=True, exist_ok=True)
        empty = base.is_dir() and not [e for e in os.scandir(base) if e.name != LOCK_FILE]
    except OSError as exc:
        raise RunDirError(f"{normalize_dir(base)}: cannot write ({exc.strerror or exc})") from None
    if empty:
        record_owned(base, *TOP_FILES)
    claim_outputs(ValidationLayout(base).top_files(), force)
