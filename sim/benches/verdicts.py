"""``kvsim bench verdicts``: how often ``kvsim compare`` calls a difference real.

A verdict (a ratio marked ``*``) is worth what its false-positive rate and its
power are on the machine at hand, so this bench measures both (docs/statistics.md
§3). Each trial is one sweep of real points (each point run in its own process,
as ``kvsim run`` makes them) of the ``synthetic`` variant, a 2 × 2 grid:

* ``hold_ms`` 2.0 and 2.2 — a known 10 % difference in GIL hold per request;
* ``limits.request_timeout_s`` 600 and 601 — the same config under two names (a
  watchdog that never fires: nothing measured depends on it).

Each trial gives two A/A comparisons (601 against 600, at each hold) and two A/B
comparisons (2.2 against 2.0, at each name), for GIL hold per request and p99
latency, judged three ways side by side (and from the second trial on, each
method's run against the previous trial's: ``kvsim compare A B`` of two runs of one
config, unpaired):

* **new**: interleaved rounds, the default repeats, ``ratio_verdict`` (the intervals
  ``kvsim compare`` prints now);
* **old on the same runs**: the same runs, the two-level bootstrap over repeats and
  requests that ``compare`` used before (``sim.analysis.bootstrap.ratio_interval``);
* **old as shipped**: one repeat in point-major order, the request bootstrap.

The counts are of comparisons marked ``*`` by the rule the table prints with. The
two comparisons of a trial share runs, so they are not independent: the trials
are the unit of independence, the comparisons are what a user would read.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim import columns
from sim.config import ExperimentConfig
from sim.console import output_console

__all__ = ["HELP", "Tally", "add_arguments", "main", "run_trials", "trial_config"]

HELP = "how often a verdict (*) fires: A/A and a 10% A/B, new method beside the old"

HOLD_A, HOLD_B = 2.0, 2.2
#: limits.request_timeout_s of the two names of one config (a watchdog: changes nothing).
NAME_A, NAME_B = 600.0, 601.0
#: (metric label, requests.csv column, statistic)
METRICS = (
    ("GIL hold", columns.GIL_HOLD_MS.name, "mean"),
    ("p99 latency", columns.LATENCY_MS.name, "p99"),
)
METHODS = (
    "new",
    "old, same runs",
    "old as shipped",
    "new, two runs",
    "old, two runs",
)


def trial_config(
    repeats: int, order: str, seed: int, requests: int, rate_rps: float
) -> dict[str, Any]:
    """One trial's sweep: synthetic hold 2.0/2.2 × two names of one config."""
    return {
        "name": "bench-verdicts",
        "seed": seed,
        "repeats": repeats,
        "model": {"regions": 4, "block_len": [4096], "block_size": 16, "num_blocks": 1024},
        "workload": {
            "requests": requests,
            "arrival": {"kind": "poisson", "rate_rps": rate_rps},
            "tokens": 256,
        },
        "connector": {"variant": "synthetic", "workers": 1, "options": {"hold_ms": HOLD_A}},
        "store": {columns.LATENCY_MS.name: 0.2, "concurrency": 8},
        "gil": {"probe": False},
        "sweep": {
            "order": order,
            "connector.options.hold_ms": [HOLD_A, HOLD_B],
            "limits.request_timeout_s": [NAME_A, NAME_B],
        },
    }


@dataclass
class Tally:
    """Comparisons marked ``*``, of how many, per (method, kind, metric)."""

    marked: dict[tuple[str, str, str], int] = field(default_factory=dict)
    total: dict[tuple[str, str, str], int] = field(default_factory=dict)
    trials: int = 0
    runs: int = 0
    seconds: float = 0.0
    #: New method, per (kind, metric): each comparison's ratio, and the spread (sd of the
    #: log) of its per-round ratios — the run-to-run noise a verdict has to see through.
    ratios: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    spreads: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add(self, method: str, kind: str, metric: str, star: bool) -> None:
        key = (method, kind, metric)
        self.marked[key] = self.marked.get(key, 0) + int(star)
        self.total[key] = self.total.get(key, 0) + 1


def _run(
    raw: dict[str, Any], out: Path, isolate: bool
) -> dict[tuple[float, float], dict[str, dict[str, Any]]]:
    """Run one sweep; per (hold, name): {round: {column: values}}."""
    from sim.preflight import parse_checked_mapping  # the pre-flight checks: only here
    from sim.rundir.layout import REQUESTS_FILE  # the run directory: only when a sweep runs
    from sim.rundir.outputs import read_csv  # the run directory: only when a sweep runs
    from sim.sweep.session import open_session, plan_run  # heavy (simpy): only when run

    cfg, points = parse_checked_mapping(raw)
    plan = plan_run(cfg, points, out)
    with open_session(plan, isolate=isolate) as session:
        outcome = session.run(plan)
    if not outcome.ok:
        raise RuntimeError(f"a bench point did not finish: {outcome.unfinished[:1]}")
    cells: dict[tuple[float, float], dict[str, dict[str, Any]]] = {}
    for row in read_csv(out / REQUESTS_FILE):
        if row.get("status", "ok") != "ok":
            continue
        key = (float(row["hold_ms"]), float(row["request_timeout_s"]))
        per_round = cells.setdefault(key, {}).setdefault(row["repeat"], {})
        for _, col, _ in METRICS:
            per_round.setdefault(col, []).append(float(row[col]))
    return cells


def _series(
    cells: dict[tuple[float, float], dict[str, dict[str, Any]]], key: tuple[float, float], col: str
) -> dict[str, np.ndarray]:
    return {k: np.asarray(v[col], dtype=float) for k, v in sorted(cells[key].items())}


#: (kind, B, A) cells of one trial's grid: (hold, name).
_PAIRS = (
    ("A/A", (HOLD_A, NAME_B), (HOLD_A, NAME_A)),
    ("A/A", (HOLD_B, NAME_B), (HOLD_B, NAME_A)),
    ("A/B", (HOLD_B, NAME_A), (HOLD_A, NAME_A)),
    ("A/B", (HOLD_B, NAME_B), (HOLD_A, NAME_B)),
)


def _judge(
    tally: Tally,
    cells: dict[tuple[float, float], dict[str, dict[str, Any]]],
    methods: tuple[str, ...],
    seed: int,
    n_boot: int,
    prev: dict[tuple[float, float], dict[str, dict[str, Any]]] | None = None,
) -> None:
    """Mark each comparison of one trial's grid (``_PAIRS``), or with ``prev``, of two runs
    made at different times (``_ACROSS``: B from ``cells``, A from ``prev``): the new
    method paired by round there, unpaired here (as compare A B does); the old one its
    request bootstrap."""
    from sim.analysis.bootstrap import ratio_interval  # not with `kvsim bench --help`
    from sim.analysis.verdict import marks, ratio_verdict  # not with `kvsim bench --help`

    for i, (kind, b, a) in enumerate(_PAIRS if prev is None else _ACROSS):
        for label, col, stat in METRICS:
            sb, sa = _series(cells, b, col), _series(cells if prev is None else prev, a, col)
            for method in methods:
                if method.startswith("new"):
                    v = ratio_verdict(
                        sb, sa, stat, paired=prev is None, n_boot=n_boot, seed=[seed, i]
                    )
                    low, high = v.low, v.high
                    if prev is None:
                        tally.ratios.setdefault((kind, label), []).append(v.ratio)
                        tally.spreads.setdefault((kind, label), []).append(_spread(sb, sa, stat))
                else:
                    r = ratio_interval(
                        list(sb.values()), list(sa.values()), stat, n_boot, [seed, i]
                    )
                    low, high = r.low, r.high
                tally.add(method, kind, label, marks(low, high))


def _spread(b: dict[str, np.ndarray], a: dict[str, np.ndarray], stat: str) -> float:
    """sd of the log of B/A round by round (NaN below two rounds)."""
    from sim.analysis.bootstrap import statistic  # not with `kvsim bench --help`

    logs = [
        math.log(float(statistic(b[k], stat)) / float(statistic(a[k], stat))) for k in b if k in a
    ]
    return float(np.std(logs, ddof=1)) if len(logs) > 1 else math.nan


#: (kind, B cell of this trial's run, A cell of the previous trial's run): compare A B of
#: two runs of one config, as `kvsim compare RUN_A RUN_B` sets them side by side.
_ACROSS = (
    ("A/A", (HOLD_A, NAME_A), (HOLD_A, NAME_A)),
    ("A/A", (HOLD_B, NAME_B), (HOLD_B, NAME_B)),
    ("A/B", (HOLD_B, NAME_A), (HOLD_A, NAME_A)),
    ("A/B", (HOLD_B, NAME_B), (HOLD_A, NAME_B)),
)


def run_trials(
    trials: int,
    repeats: int,
    requests: int,
    rate_rps: float,
    seed: int = 0,
    n_boot: int = 400,
    work_dir: Path | None = None,
    progress: Callable[[int, Tally], None] | None = None,
    isolate: bool = True,
) -> Tally:
    """``trials`` trials of the new method and of the old as shipped, alternately; from
    the second trial on, each method's run is also compared with its previous trial's
    (two runs of one config, as ``kvsim compare A B`` does).

    ``isolate=False`` runs the points in this process (no interpreter start per run:
    several times faster here, but without the spread a fresh process adds)."""
    tally = Tally()
    began = time.perf_counter()
    prev_new: dict[tuple[float, float], dict[str, dict[str, Any]]] | None = None
    prev_old: dict[tuple[float, float], dict[str, dict[str, Any]]] | None = None
    with tempfile.TemporaryDirectory(prefix="kvsim-bench-verdicts-", dir=work_dir) as tmp:
        for t in range(trials):
            trial_seed = seed * 1_000_003 + t
            new = trial_config(repeats, "interleaved", trial_seed, requests, rate_rps)
            cells = _run(new, Path(tmp) / f"new-{t}", isolate)
            _judge(tally, cells, ("new", "old, same runs"), trial_seed, n_boot)
            if prev_new is not None:
                _judge(tally, cells, ("new, two runs",), trial_seed, n_boot, prev_new)
            prev_new = cells
            old = trial_config(1, "grid", trial_seed, requests, rate_rps)
            cells = _run(old, Path(tmp) / f"old-{t}", isolate)
            _judge(tally, cells, ("old as shipped",), trial_seed, n_boot)
            if prev_old is not None:
                _judge(tally, cells, ("old, two runs",), trial_seed, n_boot, prev_old)
            prev_old = cells
            tally.trials += 1
            tally.runs += 4 * (repeats + 1)
            tally.seconds = time.perf_counter() - began
            if progress is not None:
                progress(t + 1, tally)
    return tally


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trials", type=int, default=4, help="sweeps of each method (4)")
    p.add_argument(
        "--repeats", type=int, default=None, help="repeats of the new method (default: kvsim's)"
    )
    p.add_argument("--requests", type=int, default=60, help="requests per point run (60)")
    p.add_argument("--rate", type=float, default=100.0, help="arrivals per second (100)")
    p.add_argument("--bootstrap", type=int, default=400, help="resamples per interval (400)")
    p.add_argument("--seed", type=int, default=0, help="seed of the trials (0)")
    p.add_argument(
        "--in-process",
        action="store_true",
        help="run the points in this process, not one process each as kvsim run does "
        "(faster; leaves out the spread a fresh interpreter adds)",
    )


def _rate(tally: Tally, key: tuple[str, str, str]) -> str:
    n = tally.total.get(key, 0)
    if not n:
        return "—"
    k = tally.marked.get(key, 0)
    return f"{k}/{n} ({k / n:.0%})"


def _noise_line(tally: Tally) -> str:
    """What the new method saw: the median ratio of each kind, and the run-to-run spread."""
    parts = []
    for label, _, _ in METRICS:
        ab = np.nanmedian(tally.ratios.get(("A/B", label), [math.nan]))
        sd = np.nanmedian(
            tally.spreads.get(("A/A", label), []) + tally.spreads.get(("A/B", label), [])
            or [math.nan]
        )
        parts.append(f"{label}: A/B ratio {ab:.3f}× (median), a round's ratio moves {sd:.1%}")
    return (
        "new method, measured: "
        + "; ".join(parts)
        + " (median sd of the per-round log ratio: the run-to-run noise)"
    )


def _argument_error(args: argparse.Namespace) -> str | None:
    """The first bad argument, named with what is allowed (None when all are good)."""
    from sim.analysis.verdict import MIN_REPEATS  # the verdicts: not with `kvsim bench --help`

    if args.trials < 1:
        return f"--trials: allowed 1 or more (got {args.trials})"
    if args.repeats is not None and not MIN_REPEATS <= args.repeats <= 1000:
        return (
            f"--repeats: allowed {MIN_REPEATS} to 1000 (got {args.repeats}); with fewer than "
            f"{MIN_REPEATS} no ratio has an interval, so there is no * to count"
        )
    if args.requests < 2:
        return f"--requests: allowed 2 or more per point run (got {args.requests})"
    if not (math.isfinite(args.rate) and args.rate > 0):
        return f"--rate: allowed a finite number of arrivals per second above 0 (got {args.rate:g})"
    if not 100 <= args.bootstrap <= 100_000:
        return f"--bootstrap: allowed 100 to 100000 resamples (got {args.bootstrap})"
    if args.seed < 0:  # a trial's config seed is built from it; a config's seed is >= 0
        return f"--seed: allowed a whole number, 0 or more (got {args.seed})"
    return None


def main(args: argparse.Namespace) -> int:
    from rich import box  # rich loads only when the table is printed
    from rich.table import Table  # rich loads only when the table is printed

    console = output_console()
    bad = _argument_error(args)
    if bad is not None:
        console.print(f"kvsim bench verdicts: {bad}")
        return 2
    default = int(ExperimentConfig.model_fields["repeats"].default)
    repeats = default if args.repeats is None else args.repeats
    console.print(
        f"{args.trials} trial(s) × 2 sweeps of 4 points (synthetic hold {HOLD_A:g}/{HOLD_B:g} ms "
        f"× two names of one config), {args.requests} requests at {args.rate:g}/s a point: "
        f"new {repeats} repeat(s) interleaved, old 1 repeat point-major"
    )

    def progress(done: int, tally: Tally) -> None:
        console.print(f"  trial {done}/{args.trials} done ({tally.seconds:.0f} s)")

    tally = run_trials(
        args.trials,
        repeats,
        args.requests,
        args.rate,
        args.seed,
        args.bootstrap,
        None,
        progress,
        isolate=not args.in_process,
    )
    table = Table(
        title=f"kvsim bench verdicts · comparisons marked * (of {tally.trials} trial(s))",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("method")
    heads = [(kind, label) for kind in ("A/A", "A/B") for label, _, _ in METRICS]
    for kind, label in heads:
        table.add_column(f"{kind}\n{label}", justify="right")
    for method in METHODS:
        table.add_row(method, *(_rate(tally, (method, kind, label)) for kind, label in heads))
    console.print(table)
    console.print(_noise_line(tally))
    console.print(
        "A/A: the same config under two names (target: at most 5 % marked); A/B: hold "
        f"{HOLD_B:g} against {HOLD_A:g} ms, 10 % more (target: at least 80 % marked); "
        f"new: {repeats} interleaved repeats, intervals from the spread between them "
        "(docs/statistics.md); old: the request/repeat bootstrap compare used before; two "
        "runs: each trial's run against the previous trial's (compare A B: the same config "
        "twice, A/A; B's hold 2.2 against A's 2.0, A/B), unpaired. Two comparisons per trial "
        f"share its runs. {tally.runs} point runs "
        f"{'in this process' if args.in_process else 'each in its own process'} in "
        f"{tally.seconds:.0f} s; the figures move with the machine's load."
    )
    return 0
