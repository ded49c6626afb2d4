"""``kvsim validate-model CONFIG``: run a grid in both modes, report the model's error.

The config's grid gets one more axis, ``mode: [real, model]``, and runs into one
run directory (``--out``, default ``results/<name>-validate``): real points in
child processes as usual, model points in this process. The table pairs every
real point with its model twin; ``validation.csv`` and ``validation.md`` are
written beside the run's other files. ``--no-run`` reports on a finished run.
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
    for name, *_ in METRICS:
        short = name.removesuffix("_ms")
        heads += [f"{short} real [95% CI]", f"{short} model", "err"]
    lines = [f"# {title}", "", "| " + " | ".join(heads) + " |", "|" + "--|" * len(heads)]
    csv_rows = []
    for r in rows:
        cells = [r.key[a] for a in axes]
        row: dict[str, Any] = dict(r.key)
        for name, *_ in METRICS:
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
        lines.append(
            f"- {name}: {s[f'{name}_met']}/{s['points']} points within ±{target:.0%} "
            f"(median |error| {_pct(s[f'{name}_median'])}, worst {_pct(s[f'{name}_worst'])})"
        )
    for name, *_ in METRICS:
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


def main(args: argparse.Namespace) -> int:
    from sim.config import parse_config
    from sim.model.validate import validate_run
    from sim.rundir.outputs import atomic_write_text, write_csv
    from sim.rundir.reader import load_results

    sets = [*args.set, "sweep.mode=[real,model]"]
    cfg, points = parse_config(args.config, sets)
    out_dir = Path(args.out or f"results/{cfg.name}-validate").absolute()
    if not args.no_run:
        from sim.model.coverage import check_points
        from sim.rundir.guard import prepare_run_dir
        from sim.sweep.experiment import check_resumable, run_experiment

        check_points(points)
        if args.resume:
            check_resumable(cfg, out_dir)
        prepare_run_dir(out_dir, args.force, args.resume)

        def started(point: Any, _rep: int) -> None:
            print(f"· {point.label}", file=sys.stderr, flush=True)

        run_experiment(
            cfg,
            points,
            Path(args.config),
            out_dir,
            started,
            resume=args.resume,
            overrides=sets,
        )
    res = load_results(out_dir)
    rows = validate_run(res, n_boot=args.boot)
    text, csv_rows = render(rows, f"kvsim validate-model · {cfg.name}")
    print(text)
    if csv_rows:
        write_csv(out_dir / "validation.csv", list(csv_rows[0]), csv_rows)
    atomic_write_text(out_dir / "validation.md", text)
    print(f"written: {out_dir / 'validation.md'}, {out_dir / 'validation.csv'}")
    return 0
