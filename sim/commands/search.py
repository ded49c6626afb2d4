"""``kvsim search CONFIG --slo 'latency_p99_ms<=100' --over workload.arrival.rate_rps``.

Per variant (per combination of the config's other sweep axes), the highest
arrival rate — or the best worker count — at which every objective holds,
found by running real points (see ``sim.slo_search``). The points land in one run
directory like any run's, so ``kvsim compare`` and ``kvsim plot`` read them, and
``--resume`` continues an interrupted search without redoing a point.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys

import sim
from sim.api.experiments import Experiment, open_config
from sim.api.search import SearchArgs, SearchResult, search_dir
from sim.commands.common_args import add_mode_argument, add_plugin_argument, add_set_argument
from sim.commands.interrupt import hint_on_interrupt
from sim.rundir.layout import RESULTS_FILE, SEARCH_FILE, SUMMARY_FILE


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="experiment YAML file (its sweep axes become the series)")
    p.add_argument(
        "--slo",
        action="append",
        required=True,
        metavar="METRIC<=LIMIT",
        help="objective on a summary.csv column, in its unit (repeatable; all must hold): "
        "'latency_p99_ms<=100', 'stall_p99_ms<=5', 'engine_stall_p99_ms<=2'",
    )
    p.add_argument(
        "--over",
        required=True,
        metavar="FIELD",
        help="config field to search: workload.arrival.rate_rps (highest rate meeting the "
        "SLO) or connector.workers (best worker count), or any numeric field",
    )
    p.add_argument(
        "--goal",
        choices=("max", "min", "best"),
        help="max: highest value meeting the SLO (default; bisection); min: lowest; best: "
        "scan powers of two, keep the lowest metric (default for connector.workers)",
    )
    p.add_argument("--lo", type=float, help="lowest value to try (default: start / 64, or 1)")
    p.add_argument("--hi", type=float, help="highest value to try (default: start x 64, or 16)")
    p.add_argument(
        "--tol",
        type=float,
        default=0.1,
        help="stop bisecting when the bracket is this narrow, relative (0.1 = 10%%)",
    )
    p.add_argument(
        "--max-runs",
        type=int,
        default=6,
        metavar="N",
        help="points tried per series at most (6); each is a full run of the config's requests",
    )
    p.add_argument(
        "--out",
        help="run directory (default: results/<name>-search, from the working directory)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--force", action="store_true", help="replace a previous search there")
    mode.add_argument(
        "--resume", action="store_true", help="continue a previous search; tried points are kept"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="only the result lines")
    p.add_argument(
        "--in-process",
        action="store_true",
        help="run points in this process instead of one child process each (debugging)",
    )
    add_set_argument(p)
    add_mode_argument(p)
    add_plugin_argument(p)


def main(cli_args: argparse.Namespace) -> int:
    args = SearchArgs.from_cli_args(cli_args)
    with open_config(args.config, args.sets, args.plugins) as exp:
        _search(args, exp)
    return 0


def _search(args: SearchArgs, exp: Experiment) -> None:
    argv = [a for a in sys.argv[1:] if a not in ("--force", "--resume")]
    hint = (
        f"points tried so far are kept in {search_dir(exp, args.out)}; "
        f"`kvsim {shlex.join(argv)} --resume` continues"
    )
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    events = sim.SweepEvents(started=lambda rep, _host: say(f"  … {rep.point.label}"), note=say)
    with hint_on_interrupt(hint):
        found = sim.search(
            exp,
            args.over,
            args.slo,
            args.out,
            goal=args.goal,
            lo=args.lo,
            hi=args.hi,
            tol=args.tol,
            max_runs=args.max_runs,
            force=args.force,
            resume=args.resume,
            isolate=not args.in_process,
            events=events,
        )
    _print(found)


def _print(found: SearchResult) -> None:
    """The answer per series, the harness's noise floor beside the limits, the files."""
    out_dir, figure = found.out_dir, found.figure
    if found.figure_error:
        print(f"warning: no search figure ({found.figure_error})", file=sys.stderr)
    for line in found.lines():
        print(line)
    floor = found.noise_floor_p99_ms
    if math.isfinite(floor):
        note = f"harness noise floor: p99 ≤ {floor:.3g} ms over the points tried"
        lat = [s for s in found.slos if s.metric.endswith("_ms")]
        if lat and floor > 0.1 * min(s.limit for s in lat):
            note += " — more than 10% of the limit: the answer is only as good as that"
        print(note)
    print(
        f"points in {out_dir} ({SUMMARY_FILE}, {RESULTS_FILE}, {SEARCH_FILE}"
        + (f", {figure.relative_to(out_dir)}" if figure else "")
        + "); `kvsim compare` and `kvsim plot` read them"
    )
