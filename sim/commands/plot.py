"""``kvsim plot RUN_DIR``: PNG figures of a finished run, into RUN_DIR/figures/."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "draw PNG figures of a finished run (latency CDF, p99 vs workers, GIL hold)"


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


def main(args: argparse.Namespace) -> int:
    from sim.analysis.completeness import completeness_warnings
    from sim.analysis.hosts import host_warnings
    from sim.analysis.plot import plot_results
    from sim.errors import UsageError
    from sim.rundir.reader import load_results

    res = load_results(args.results)
    warnings = completeness_warnings(res)
    hosts = host_warnings(res)
    if res.note:
        print(res.note, file=sys.stderr)
    for line in [*warnings, *hosts]:
        print(f"warning: {line}", file=sys.stderr)
    from sim.rundir.layout import FIGURES_DIR

    out = Path(args.out) if args.out else res.dir / FIGURES_DIR
    try:
        notes = ["partial run"] * bool(warnings) + ["mixed hardware"] * bool(hosts)
        note = f"{' and '.join(notes)} (see warnings)" if notes else ""
        paths = plot_results(res, out, args.x, seed=args.seed, note=note)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _own(res.dir, paths)
    for p in paths:
        print(p)
    return 0


def _own(run_dir: Path, paths: list[Path]) -> None:
    """Name the figures written inside the run in its ledger (so --force may remove them)."""
    from sim.rundir.guard import record_owned

    inside = []
    for p in paths:
        try:
            inside.append(str(Path(p).absolute().relative_to(run_dir.absolute())))
        except ValueError:
            continue
    if inside:
        record_owned(run_dir, *inside)
