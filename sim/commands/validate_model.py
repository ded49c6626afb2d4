"""``kvsim validate-model CONFIG``: run a grid in both modes, report the model's error.

The config's grid runs four times under ``--out`` (default
``results/<name>-validate``): ``real/`` (real mode, child processes as usual),
``model/`` (model mode, each point given the background load of other processes
measured just before and after its real twin, and the thread wake-up and timer
latencies measured around the real runs: a shared machine is part of the conditions),
``model-idle/`` (model mode on an idle machine) and ``model-matched/`` (as ``model/``,
each point also at the speed its real twin met: sim.validation.paired.speed_scales);
``--aa`` adds ``real-again/``, the real grid once more, scored against the first.
The table pairs every real point with its model twin; ``validation.csv`` and
``validation.md`` are written in ``--out``. ``--no-run`` reports on finished runs.
The work is the library's (``sim.validate_model``, sim/api/validate_model.py): this
parses the arguments, calls it and prints.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import sim
from sim.api.validate_model import LEVELS, MIN_REPEATS, ValidateModelArgs
from sim.commands.common_args import add_set_argument

if TYPE_CHECKING:
    from sim.rundir.layout import RepRun


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="experiment YAML file")
    p.add_argument("--out", help="run directory (default: results/<name>-validate)")
    p.add_argument("--force", action="store_true", help="replace a previous run there")
    p.add_argument("--resume", action="store_true", help="finish a previous run there")
    p.add_argument("--no-run", action="store_true", help="report on the finished run only")
    p.add_argument("--boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument(
        "--repeats",
        type=_repeats,
        help=f"repeats of each point in both modes, pooled per point (default: the config's, "
        f"at least {MIN_REPEATS}: with one the real side does not reproduce itself to the "
        "targets; docs/model-mode.md, Validation)",
    )
    p.add_argument(
        "--aa",
        action="store_true",
        help="run the real grid a second time (same seeds, last) and score it against the "
        "first by each level's targets: the machine's own noise, beside which the model's "
        "score is read (adds the real runs' time again)",
    )
    p.add_argument(
        "--level",
        choices=LEVELS,
        default=LEVELS[-1],
        help="what to judge (default %(default)s; docs/model-mode.md, Validation): "
        "'prediction', the calibrated model against the real runs, beside the real side's "
        "own repeatability (--aa); 'mechanism', the real runs' own measured holds replayed "
        "through the model (no model runs: the machine's speed taken out)",
    )
    add_set_argument(p)


def _repeats(text: str) -> int:
    """--repeats as a count of runs (1 to 1000, as the config's ``repeats``)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 1000:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 1000, got {text!r}")
    return n


def main(cli_args: argparse.Namespace) -> int:
    args = ValidateModelArgs.from_cli_args(cli_args)
    exp = sim.load(args.config, args.sets)  # --audit as its --set item, both modes

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def started(rep: RepRun, _host: str) -> None:
        values = " ".join(str(v) for a, v in rep.point.axes.items() if a != "mode")
        say(f"  · point {rep.point.index} ({values}), repeat {rep.repeat}")

    # each run's points under a heading (the library's note before it): no line says mode=
    events = sim.SweepEvents(started=started, note=say)
    found = sim.validate_model(
        exp,
        args.out,
        force=args.force,
        resume=args.resume,
        run=args.run,
        boot=args.boot,
        repeats=args.repeats,
        aa=args.aa,
        level=args.level,
        events=events,
    )
    print(found.text)
    print(f"written: {', '.join(str(p) for p in found.files)}")
    return 0
