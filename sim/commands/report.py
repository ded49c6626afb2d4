"""``kvsim report RUN``: one Markdown page for a pull request (sim.analysis.pr_report)."""

from __future__ import annotations

import argparse
from pathlib import Path

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
        help="where to write the page (default: RUN/report.md)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the interval's bootstrap floor")


def main(args: argparse.Namespace) -> int:
    from sim.analysis.pr_report import bench_rows, pr_markdown
    from sim.errors import UsageError
    from sim.rundir.guard import is_kvsim_run, record_owned
    from sim.rundir.outputs import atomic_write_text
    from sim.rundir.reader import load_results

    res = load_results(args.run)
    try:
        bench = bench_rows(args.bench) if args.bench else None
        text = pr_markdown(res, args.baseline, bench, seed=args.seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    out = (args.out or res.dir / "report.md").absolute()
    if is_kvsim_run(out.parent) and not out.parent.is_symlink():
        record_owned(out.parent, out.name)  # a file kvsim wrote in its run: --force may remove it
    atomic_write_text(out, text)
    print(text, end="")
    print(f"\n(written: {out})")
    return 0
