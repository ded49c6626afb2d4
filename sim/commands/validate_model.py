"""``kvsim validate-model CONFIG``: run a grid in both modes, report the model's error.

The config's grid runs four times under ``--out`` (default
``results/<name>-validate``): ``real/`` (real mode, child processes as usual),
``model/`` (model mode, each point given the background load of other processes
measured just before and after its real twin, and the thread wake-up and timer
latencies measured around the real runs: a shared machine is part of the conditions),
``model-idle/`` (model mode on an idle machine) and ``model-matched/`` (as ``model/``,
each point also at the speed its real twin met: sim.model.validate.speed_scales).
The table pairs every real point with its model twin; ``validation.csv`` and
``validation.md`` are written in ``--out``. ``--no-run`` reports on finished runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

HELP = "run a config in real and model mode and report the model's error per point"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from sim.commands.run import add_set_argument

    p.add_argument("config", help="experiment YAML file")
    p.add_argument("--out", help="run directory (default: results/<name>-validate)")
    p.add_argument("--force", action="store_true", help="replace a previous run there")
    p.add_argument("--resume", action="store_true", help="finish a previous run there")
    p.add_argument("--no-run", action="store_true", help="report on the finished run only")
    p.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    add_set_argument(p)


def _fmt(x: float, digits: int = 2) -> str:
    return "–" if math.isnan(x) else f"{x:.{digits}f}"


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:+.0%}"


def render(rows: list[Any], title: str) -> tuple[str, list[dict[str, Any]]]:
    """Markdown table and CSV rows of a validation."""
    from sim.model.validate import METRICS, TARGETS, summary_counts

    if not rows:
        return f"# {title}\n\nNo point has both a real and a model run.\n", []
    axes = list(rows[0].key)
    heads = [*axes]
    # a metric no point has on either side (the engine's, with the engine off) is left out
    shown = [
        name
        for name, *_ in METRICS
        if any(not (math.isnan(r.real[name].value) and math.isnan(r.model[name])) for r in rows)
    ]
    for name in shown:
        short = name.removesuffix("_ms")
        heads += [f"{short} real [95% CI]", f"{short} model", "err"]
    lines = [f"# {title}", "", "| " + " | ".join(heads) + " |", "|" + "--|" * len(heads)]
    csv_rows = []
    for r in rows:
        cells = [r.key[a] for a in axes]
        row: dict[str, Any] = dict(r.key)
        for name in shown:
            iv, m, err = r.real[name], r.model[name], r.error(name)
            ci = "" if math.isnan(iv.low) else f" [{_fmt(iv.low)}, {_fmt(iv.high)}]"
            mark = ""
            if r.within(name) is False:
                mark = " ✗"
            elif r.within(name):
                mark = " ✓"
            cells += [f"{_fmt(iv.value)}{ci}", _fmt(m), f"{_pct(err)}{mark}"]
            row.update(
                {
                    f"{name}_real": iv.value,
                    f"{name}_real_low": iv.low,
                    f"{name}_real_high": iv.high,
                    f"{name}_model": m,
                    f"{name}_error": err,
                }
            )
        lines.append("| " + " | ".join(cells) + " |")
        csv_rows.append(row)
    s = summary_counts(rows)
    lines += [""]
    for name, target in TARGETS.items():
        if name in shown:
            lines.append(
                f"- {name}: {s[f'{name}_met']}/{s[f'{name}_points']} points within {target} "
                f"(median |error| {_pct(s[f'{name}_median'])}, worst "
                f"{_pct(s[f'{name}_worst'])})"
            )
    for name in shown:
        if name not in TARGETS:
            lines.append(
                f"- {name}: median |error| {_pct(s[f'{name}_median'])}, "
                f"worst {_pct(s[f'{name}_worst'])} (no target)"
            )
    lines.append(
        "- ✓/✗: within/outside the target; [..]: 95% bootstrap interval of the real value "
        "(requests resampled); the model's own run-to-run spread is not shown."
    )
    return "\n".join(lines) + "\n", csv_rows


def _run(
    path: str,
    sets: list[str],
    out_dir: Path,
    args: argparse.Namespace,
    loads: dict[int, list[float]] | None = None,
    measure: bool = False,
    scales: dict[tuple[str, ...], float] | None = None,
) -> None:
    """Run the grid of ``path`` with ``sets`` into ``out_dir``. With ``measure`` the
    background load is measured before and after each point into ``loads``; without,
    each point of a model grid is given the mean of what ``loads`` holds for it, and
    its ``machine.cpu_scale`` from ``scales`` (by its axis values) when given."""
    from sim.config import Point, parse_config
    from sim.events import SweepEvents
    from sim.model.measure import measure_background_load
    from sim.sweep.session import open_session, plan_run

    cfg, points = parse_config(path, sets)
    if loads is not None and not measure:
        points = [
            Point(p.index, p.axes, _with_load(p.config, sum(loads[p.index]) / 2))
            if p.index in loads
            else p
            for p in points
        ]
    if scales is not None:
        points = [Point(p.index, p.axes, _with_scale(p, scales)) for p in points]
    plan = plan_run(cfg, points, out_dir, source=Path(path), overrides=sets)
    if args.resume and plan.existing and not plan.difference and not plan.pending:
        return

    def started(rep: Any, _host: str) -> None:
        if measure and loads is not None:
            loads[rep.point.index] = [measure_background_load()]
        print(f"· {rep.point.label}", file=sys.stderr, flush=True)

    def finished(rep: Any, _outcome: Any) -> None:
        if measure and loads is not None:
            loads[rep.point.index].append(measure_background_load())

    with open_session(plan, force=args.force, resume=args.resume) as session:
        session.run(plan, SweepEvents(started=started, finished=finished))


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


def _loadavg() -> list[float] | None:
    import os

    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _loadavg_note(cal_file: Path) -> str:
    """The load average around the real runs, as recorded in ``cal_file`` ('' if not)."""
    cond = _read_json(cal_file).get("conditions", {})
    before, after = cond.get("loadavg_before"), cond.get("loadavg_after")
    if not before or not after:
        return ""

    def fmt(xs: list[float]) -> str:
        return ", ".join(f"{x:.2f}" for x in xs)

    return (
        f" Load average (1, 5, 15 min) before the real runs {fmt(before)}, after them {fmt(after)}."
    )


def _merge_conditions(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Conditions measured before and after the real runs, pooled."""
    import statistics

    out: dict[str, Any] = {
        "background_load": (a["background_load"] + b["background_load"]) / 2,
        "probe_hold_ms": (a["probe_hold_ms"] + b["probe_hold_ms"]) / 2,
    }
    for key, value in a.items():
        if key.endswith("_samples_ms"):
            pooled = sorted([*value, *b[key]])
            out[key] = pooled
            out[key.replace("_samples_ms", "_ms")] = statistics.median(pooled)
    return out


#: What validate-model writes at the top of its --out directory (beside the four runs).
TOP_FILES = (
    "background_load.json",
    "calibration-conditions.json",
    "speed_scales.json",
    "validation.csv",
    "validation.md",
)


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
    claim_outputs([base / name for name in TOP_FILES], force)


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object validate-model wrote beside its runs (RunDirError if it is not one)."""
    import json

    from sim.errors import RunDirError
    from sim.files.read import read_bounded

    raw = read_bounded(path, what="record", limit=16 << 20, error=RunDirError, within=path.parent)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise RunDirError(f"{path}: not the JSON object validate-model wrote; rerun it")
    return data


def _matched_line(real: Any, matched: Any, scales_file: Path) -> str:
    """The summary line of the speed-matched model (its table is in model-matched/)."""

    from sim.model.validate import summary_counts, validate_runs

    m = summary_counts(validate_runs(real, matched, n_boot=1))
    scales = list(_read_json(scales_file).values()) if scales_file.is_file() else []
    span = f", {min(scales):.2f}–{max(scales):.2f} here" if scales else ""
    return (
        f"- the same model at the speed each real point met (machine.cpu_scale = its mean "
        f"GIL hold over the model's{span}; model-matched/): latency p50 "
        f"{m['latency_p50_ms_met']}/{m['points']} within ±10% (median |error| "
        f"{_pct(m['latency_p50_ms_median'])}), p99 {m['latency_p99_ms_met']}/{m['points']} "
        f"within ±15% (median |error| {_pct(m['latency_p99_ms_median'])})\n"
    )


def main(args: argparse.Namespace) -> int:
    import json

    from sim.commands.run import set_items
    from sim.config import parse_config
    from sim.model.coverage import point_calibration
    from sim.model.measure import measure_conditions
    from sim.model.validate import summary_counts, validate_runs
    from sim.rundir.outputs import atomic_write_text, write_csv, write_json
    from sim.rundir.reader import load_results

    args.set = set_items(args)  # --audit as its --set item, for both modes
    cfg, _points = parse_config(args.config, args.set)
    base = Path(args.out or f"results/{cfg.name}-validate").absolute()
    real_dir, model_dir, idle_dir = base / "real", base / "model", base / "model-idle"
    matched_dir = base / "model-matched"
    cal_file = base / "calibration-conditions.json"
    _claim_base(base, args.force, create=not args.no_run)
    if not args.no_run:
        cal = point_calibration(cfg)
        base.mkdir(parents=True, exist_ok=True)
        loadavg_before = _loadavg()
        before = measure_conditions()
        loads: dict[int, list[float]] = {}
        _run(args.config, [*args.set, "mode=real"], real_dir, args, loads, measure=True)
        after = measure_conditions()
        loadavg_after = _loadavg()
        write_json(base / "background_load.json", {str(k): v for k, v in loads.items()})
        cond = _merge_conditions(before, after)
        data = json.loads(json.dumps(cal.data))
        data["harness"].update(cond)
        data["conditions"] = {
            "note": "harness latencies and background load re-measured around the real runs "
            "of kvsim validate-model",
            "from": cal.path,
            "background_load_before": before["background_load"],
            "background_load_after": after["background_load"],
            # the machine's load average (1, 5, 15 min) around the real runs: a shared
            # machine's figures are read beside it (docs/model-mode.md, Validation)
            "loadavg_before": loadavg_before,
            "loadavg_after": loadavg_after,
        }
        write_json(cal_file, data)
        print(
            f"machine conditions: background load {before['background_load']:.1f} before "
            f"the real runs, {after['background_load']:.1f} after; wake-up p50 "
            f"{cond['wake_ms'] * 1e3:.0f} µs",
            file=sys.stderr,
        )
        _run(
            args.config,
            [*args.set, "mode=model", f"machine.calibration={cal_file}"],
            model_dir,
            args,
            loads,
        )
        idle = [f"machine.calibration={cal.path}", "machine.background_load=0.0"]
        _run(args.config, [*args.set, "mode=model", *idle], idle_dir, args)
        from sim.model.validate import speed_scales

        scales = speed_scales(load_results(real_dir), load_results(model_dir))
        write_json(base / "speed_scales.json", {",".join(k): v for k, v in scales.items()})
        _run(
            args.config,
            [*args.set, "mode=model", f"machine.calibration={cal_file}"],
            matched_dir,
            args,
            loads,
            scales=scales,
        )
    load_note = ""
    load_file = base / "background_load.json"
    if cal_file.is_file() and load_file.is_file():
        per_point = [x for v in _read_json(load_file).values() for x in v]
        load_note = (
            f"Background load on this machine (runnable threads of other processes, measured "
            f"by a fair-share spin test before and after each real point): "
            f"{min(per_point):.1f}–{max(per_point):.1f}. Each model point was given the mean "
            f"of its real twin's two measurements, and the wake-up and timer latencies "
            f"measured around the real runs ({cal_file.name}).{_loadavg_note(cal_file)}\n\n"
        )
    real = load_results(real_dir)
    rows = validate_runs(real, load_results(model_dir), n_boot=args.boot)
    text, csv_rows = render(rows, f"kvsim validate-model · {cfg.name}")
    text = text.replace("\n\n", "\n\n" + load_note, 1) if load_note else text
    if idle_dir.is_dir():
        idle = summary_counts(validate_runs(real, load_results(idle_dir), n_boot=1))
        text += (
            f"- the same model without the background load (an idle machine): latency p50 "
            f"{idle['latency_p50_ms_met']}/{idle['points']} within ±10% (median |error| "
            f"{_pct(idle['latency_p50_ms_median'])}), p99 {idle['latency_p99_ms_met']}/"
            f"{idle['points']} within ±15% (median |error| {_pct(idle['latency_p99_ms_median'])})\n"
        )
    if matched_dir.is_dir():
        text += _matched_line(real, load_results(matched_dir), base / "speed_scales.json")
    print(text)
    if csv_rows:
        write_csv(base / "validation.csv", list(csv_rows[0]), csv_rows)
    atomic_write_text(base / "validation.md", text)
    print(f"written: {base / 'validation.md'}, {base / 'validation.csv'}")
    return 0
