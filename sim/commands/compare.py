"""``kvsim compare RUN_DIR``: variants side by side per level, with bootstrap intervals."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "compare variants of a finished run, with bootstrap confidence intervals"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="run directory (what `kvsim run` wrote)")
    p.add_argument(
        "--by",
        default="variant",
        metavar="AXIS",
        help="sweep axis whose values are compared side by side (default: variant)",
    )
    p.add_argument(
        "--baseline", help="value of that axis the ratios are taken against (default: scalar)"
    )
    p.add_argument(
        "--metric",
        action="append",
        metavar="NAME",
        help="metric to show (repeatable): e.g. latency_p99_ms, gil_hold_mean_ms, "
        "engine_step_p99_ms, any summary.csv column, or TABLE.COLUMN:STAT[@COL=VALUE] "
        "such as steps.build_us:p50@phase=alone",
    )
    p.add_argument(
        "--bootstrap", type=int, default=2000, metavar="N", help="bootstrap resamples (2000)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (0)")
    p.add_argument(
        "--out",
        metavar="STEM",
        help="write STEM.md and STEM.csv (default: RESULTS/compare.md and RESULTS/compare.csv)",
    )


def main(args: argparse.Namespace) -> int:
    from sim.analysis.compare import compare
    from sim.analysis.report import comparison_markdown, comparison_rows
    from sim.errors import UsageError
    from sim.rundir.outputs import atomic_write_text, write_csv
    from sim.rundir.reader import load_results

    if not 100 <= args.bootstrap <= 1_000_000:
        raise UsageError(f"--bootstrap {args.bootstrap}: allowed 100 to 1000000 resamples")
    res = load_results(args.results)
    try:
        comp = compare(res, args.baseline, args.metric, args.bootstrap, args.seed, args.by)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    text = comparison_markdown(comp, str(Path(args.results)))
    cols, rows = comparison_rows(comp)
    stem = Path(args.out) if args.out else res.dir / "compare"
    md, csv = stem.with_name(stem.name + ".md"), stem.with_name(stem.name + ".csv")
    atomic_write_text(md, text)
    write_csv(csv, cols, rows)
    print(text, end="")
    print(f"\n(written: {md}, {csv})")
    return 0
