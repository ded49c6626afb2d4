"""``kvsim report RUN``: one Markdown page for a pull request (sim.analysis.pr_report)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sim.analysis.pr_report import bench_rows, pr_markdown
from sim.errors import UsageError
from sim.rundir.claim import claim_outputs
from sim.rundir.layout import REPORT_FILE, report_file
from sim.rundir.outputs import atomic_write_text
from sim.rundir.reader import load_results

HELP = "write one Markdown page for a pull request: ratios, intervals, verdicts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run directory (what `kvsim run` wrote)")
    p.add_argument("--baseline", help="variant the ratios are taken against (default: scalar)")
    p.add_argument(
        "--bench",
        type=Path,
        metavar="CSV",
        help="a `kvsim bench connectors` CSV: adds the GIL hold per call and sustained",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help=f"where to write the page (default: RUN/{REPORT_FILE})",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the interval's bootstrap floor")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace --out when it exists and no kvsim run lists it as its own (without "
        "it such a file is a reason to refuse)",
    )


def main(args: argparse.Namespace) -> int:
    res = load_results(args.run)
    try:
        bench = bench_rows(args.bench) if args.bench else None
        text = pr_markdown(
            res, args.baseline, bench, seed=args.seed, bench_path=str(args.bench) if bench else None
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    out = (args.out or report_file(res.dir)).absolute()
    claim_outputs([out], args.force)  # new, the run's own, or --force; listed before written
    atomic_write_text(out, text)
    print(text, end="")
    print(f"\n(written: {out})")
    return 0
