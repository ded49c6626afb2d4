"""``kvsim plot RUN_DIR``: PNG figures of a finished run, into RUN_DIR/figures/."""

from __future__ import annotations

import argparse
import sys

from sim.api import open_run, plot
from sim.api.reports import PlotArgs


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="run directory (what `kvsim run` wrote)")
    p.add_argument("--out", help="where the PNGs go (default: RESULTS/figures)")
    p.add_argument(
        "--x",
        metavar="AXIS",
        help="sweep axis on the x axis of the p99 and engine figures "
        "(default: workers when it varies, else the first numeric axis that does)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap error bars (0)")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace files already at the PNGs' paths that kvsim's run does not list as "
        "its own (without it such a file is a reason to refuse)",
    )


def main(cli_args: argparse.Namespace) -> int:
    args = PlotArgs.from_cli_args(cli_args)
    run = open_run(args.results)
    if run.results.note:
        print(run.results.note, file=sys.stderr)
    for line in run.warnings():
        print(f"warning: {line}", file=sys.stderr)
    for p in plot(run, args.out, args.x, seed=args.seed, force=args.force):
        print(p)
    return 0
