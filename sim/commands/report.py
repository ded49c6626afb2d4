"""``kvsim report RUN``: one Markdown page for a pull request (sim.api.reports.pr_report)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sim.api.reports import PrReportArgs, pr_report
from sim.rundir.layout import REPORT_FILE


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


def main(cli_args: argparse.Namespace) -> int:
    text, out = pr_report(PrReportArgs.from_cli_args(cli_args))
    print(text, end="")
    print(f"\n(written: {out})")
    return 0
