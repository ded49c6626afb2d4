"""``kvsim run CONFIG``: run every point, write the CSVs, print the comparison table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "run an experiment and print a comparison of its points"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="experiment YAML file")
    p.add_argument("--out", help="run directory (default: output.dir of the config)")
    p.add_argument("--force", action="store_true", help="replace a previous run in that directory")
    p.add_argument("--baseline", help="variant the ratios are taken against (default: scalar)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display or table")


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from sim.config import parse_config
    from sim.experiment import run_experiment
    from sim.report import comparison_table, pick_baseline
    from sim.rundir import prepare_run_dir

    cfg, points = parse_config(args.config)
    out_dir = Path(args.out or cfg.output_dir)
    prepare_run_dir(out_dir, args.force)
    err = Console(stderr=True)
    total = len(points) * cfg.repeats

    if args.quiet:
        result = run_experiment(cfg, points, Path(args.config), out_dir)
    else:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=False,
        ) as bar:
            state: dict[str, int] = {"n": 0}
            task = bar.add_task("starting", total=cfg.workload.requests)

            def on_point_start(point, rep):
                state["n"] += 1
                rep_txt = f" rep {rep}" if cfg.repeats > 1 else ""
                bar.reset(
                    task,
                    total=cfg.workload.requests,
                    description=f"[{state['n']}/{total}] {point.label}{rep_txt}",
                )

            result = run_experiment(
                cfg,
                points,
                Path(args.config),
                out_dir,
                on_point_start,
                lambda done, n: bar.update(task, completed=done, total=n),
            )
    rows = result.summary_rows
    if not args.quiet:
        out = Console()
        baseline = pick_baseline(rows, args.baseline)
        if args.baseline and baseline is None:
            err.print(f"warning: baseline {args.baseline!r} is not among the variants run")
        out.print(comparison_table(rows, result.axes, baseline, f"kvsim · {cfg.name}"))
        nf = max(float(r["noise_floor_p99_ms"]) for r in rows)
        out.print(
            f"harness noise floor: p99 ≤ {nf:.3f} ms · results in {out_dir}/ "
            "(requests.csv, summary.csv, manifest.json)"
        )
    failed = sum(int(r["failed"]) for r in rows)
    if failed:
        print(
            f"warning: {failed} request(s) failed; see the error column of "
            f"{out_dir / 'requests.csv'}",
            file=sys.stderr,
        )
    if result.failed_points:
        print(f"error: {len(result.failed_points)} point(s) completed no request", file=sys.stderr)
        return 1
    return 0
