"""``kvsim compare RUN_DIR [RUN_B]``: variants side by side per level, with intervals from
the spread between repeats (docs/statistics.md); with two run directories, the same
points of two runs side by side. The work is the library's (sim.api.compare_runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sim.analysis.condense import MAX_LEVELS, condense_markdown
from sim.api.compare_runs import CompareArgs, NothingToCompare, compare_runs


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "results",
        nargs="+",
        metavar="RUN",
        help="run directory (what `kvsim run` wrote); give two (RUN_A RUN_B) to compare "
        "the points the runs share, B against A",
    )
    p.add_argument(
        "--by",
        default=None,
        metavar="AXIS",
        help="sweep axis whose values are compared side by side (default: variant; "
        "with two runs: the run)",
    )
    p.add_argument(
        "--baseline",
        help="value of that axis the ratios are taken against (default: scalar; with two "
        "runs: RUN_A)",
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
        "--bootstrap",
        type=int,
        default=2000,
        metavar="N",
        help="resamples of each run's rows, the floor under an interval (2000)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (0)")
    p.add_argument(
        "--all-rows",
        action="store_true",
        help="print every level's table (by default, above 12 levels, the first and last "
        "3; the .md file written always has them all)",
    )
    p.add_argument(
        "--fail-if",
        action="append",
        default=[],
        metavar="RULE",
        help="with two runs: exit 1 when RUN_B is worse than RUN_A beyond the threshold and "
        "the difference is real by the interval across repeats (repeatable), e.g. "
        "'gil_hold_mean_ms>+5%%', 'throughput_rps<-5%%', 'latency_p99_ms>+2' (absolute)",
    )
    p.add_argument(
        "--out",
        metavar="STEM",
        help="write STEM.md and STEM.csv (default: RUN/compare.md and RUN/compare.csv; with "
        "two runs RUN_B/compare_vs_<name of RUN_A>.md and .csv)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace STEM.md / STEM.csv when they exist and no kvsim run lists them as its "
        "own (without it such a file is a reason to refuse)",
    )


def _print(text: str, md: Path, csv: Path, all_rows: bool) -> None:
    """Print the Markdown (only its first and last levels when there are many, unless
    ``all_rows``: the file ``md`` has them all), then where it was written."""
    where = f"; {md} has every one, and --all-rows prints them"
    print(condense_markdown(text, None if all_rows else MAX_LEVELS, where), end="")
    print(f"\n(written: {md}, {csv})")


def main(cli_args: argparse.Namespace) -> int:
    args = CompareArgs.from_cli_args(cli_args)
    try:
        found = compare_runs(args, lambda line: print(line, file=sys.stderr))
    except NothingToCompare as exc:
        print(exc.preface)
        raise
    _print(found.report.markdown, found.md, found.csv, args.all_rows)
    for line in found.notes:
        print(line)
    if not found.gate:
        return 0
    print()
    for line in found.gate:
        print(f"gate: {line}")
    return 1 if found.failed else 0
