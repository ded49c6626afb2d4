"""``sim.search``: the highest rate (or best worker count) an experiment sustains under an SLO.

The same search as ``kvsim search`` (which only parses its arguments, calls
:func:`search` and prints): every value tried is an ordinary point of one run
directory, run through the one sweep path (``sim.sweep.session``), so
``sim.open_run``, ``compare`` and ``plot`` read it like any run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sim.api.cli_args import namespace_fields, set_items
from sim.errors import UsageError
from sim.events import SweepEvents

if TYPE_CHECKING:  # the search and the sweep load only when a search runs
    import argparse

    from sim.api.experiments import Experiment
    from sim.slo_search.series import Series
    from sim.slo_search.slo import SLO
    from sim.slo_search.strategy import Outcome

__all__ = ["SearchArgs", "SearchResult", "search", "search_dir"]


@dataclass(frozen=True)
class SearchArgs:
    """What ``kvsim search`` was asked, checked at the door (:meth:`from_cli_args`):
    ``search(exp, args.over, args.slo, args.out, goal=args.goal, …)`` with the config,
    ``--set`` items and ``--plugin`` files opened as ``exp`` (sim.api.open_config)."""

    config: str
    slo: tuple[str, ...]
    over: str
    goal: str | None
    lo: float | None
    hi: float | None
    tol: float
    max_runs: int
    out: str | None
    force: bool
    resume: bool
    quiet: bool
    in_process: bool
    #: ``--set`` items with ``--mode`` and ``--audit`` as items of their own
    sets: tuple[str, ...]
    plugins: tuple[str, ...]

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> SearchArgs:
        """The arguments, or a one-line UsageError for a number out of range."""
        if not 0 < args.tol < 10:
            raise UsageError(f"--tol {args.tol}: allowed above 0 and below 10 (relative)")
        if not 1 <= args.max_runs <= 100:
            raise UsageError(f"--max-runs {args.max_runs}: allowed 1 to 100")
        for flag in ("lo", "hi"):
            v = getattr(args, flag)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise UsageError(f"--{flag} {v}: must be a positive number")
        return cls(**namespace_fields(cls, args, sets=set_items(args), plugins=tuple(args.plugin)))


@dataclass(frozen=True)
class SearchResult:
    """What a search found, and where its points are."""

    #: The run directory (summary.csv, results.json, search.json, figures/search.png).
    out_dir: Path
    #: The objectives every value was judged against.
    slos: list[SLO]
    #: The searched axis's column name (``rate_rps``, ``workers``, …).
    axis: str
    #: Each series (a combination of the other sweep axes) and its answer.
    results: list[tuple[Series, Outcome]]
    #: The harness's noise floor over the points tried (worst p99, ms; NaN: not measured).
    noise_floor_p99_ms: float
    #: ``figures/search.png``; None when it could not be drawn (``figure_error`` says why).
    figure: Path | None
    figure_error: str = ""

    def lines(self) -> list[str]:
        """One sentence per series: what it sustains under the objectives."""
        from sim.slo_search.report import outcome_line  # the search: only when one runs

        return [outcome_line(s, o, self.slos, self.axis) for s, o in self.results]


def search_dir(exp: Experiment, out: str | Path | None = None) -> Path:
    """Where a search of ``exp`` goes: ``out``, else ``results/<name>-search``."""
    from sim.rundir.guard import normalize_dir  # the run directory's code: not at import sim
    from sim.slo_search.driver import search_name  # the search: only when one runs

    return normalize_dir(out or f"results/{search_name(exp.config)}").absolute()


def search(
    exp: Experiment,
    over: str,
    slo: Sequence[str],
    out: str | Path | None = None,
    *,
    goal: str | None = None,
    lo: float | None = None,
    hi: float | None = None,
    tol: float = 0.1,
    max_runs: int = 6,
    force: bool = False,
    resume: bool = False,
    isolate: bool = True,
    events: SweepEvents | None = None,
) -> SearchResult:
    """Search ``over`` (a numeric config field) per series for the best value meeting
    every objective of ``slo`` (``"latency_p99_ms<=100"``, on summary.csv columns).

    ``goal``: ``max`` (highest value meeting it; bisection; the default), ``min``, or
    ``best`` (powers of two, the lowest metric; the default for ``connector.workers``);
    ``lo``/``hi`` bound the values tried, ``tol`` stops bisecting (relative),
    ``max_runs`` caps the points per series. ``force``/``resume`` as for
    ``Experiment.run`` (a resumed search redoes no point). ``events`` hears the
    sweeps, and each verdict as a note (``✓ numpy @ 50 req/s: latency_p99_ms 41.2``).
    Bad objectives or bounds are UsageErrors/ConfigErrors of one line.
    """
    from sim.point.metrics import SUMMARY_METRICS, extra_latency_columns  # numpy: not at import sim
    from sim.slo_search.driver import plan_search, run_search  # the search: only when one runs
    from sim.slo_search.measured import unmeasured  # the search: only when one runs
    from sim.slo_search.slo import parse_slo  # the search: only when one runs
    from sim.sweep.session import open_session, plan_run  # the sweep: only when a run is planned

    cfg = exp.config
    known = [*SUMMARY_METRICS, *extra_latency_columns(cfg.output.percentiles)]
    try:
        slos = [parse_slo(s, known) for s in slo]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for s in slos:  # else every point "misses" a figure that nothing measured
        why = unmeasured(s.metric, [p.config for p in exp.points])
        if why:
            raise UsageError(f"--slo {s.spec!r}: {why}")
    config_dir = exp.source.resolve().parent if exp.source is not None else Path.cwd()
    plan = plan_search(
        cfg,
        exp.points,
        over,
        slos,
        config_dir,
        goal=goal,
        lo=lo,
        hi=hi,
        tol=tol,
        max_runs=max_runs,
        source=exp.source,
        overrides=exp.overrides,
    )
    out_dir = search_dir(exp, out)
    # The config's own points are what every series starts from: checked before the
    # directory is touched; each round's points are checked again as they are made.
    grid = plan_run(plan.cfg, exp.points, out_dir, source=exp.source, overrides=exp.overrides)
    events = events or SweepEvents()
    with open_session(grid, force=force, resume=resume, isolate=isolate) as session:
        events.note(
            f"kvsim search · {len(plan.series)} series × up to {max_runs} points over "
            f"{over} ({plan.series[0].strategy.goal}) · {' and '.join(s.text for s in slos)}"
            f" · {out_dir}"
        )
        rounds = run_search(plan, session, events)
    figure, why = _draw(out_dir)
    floor = rounds.last.noise_floor_p99_ms if rounds.last is not None else float("nan")
    return SearchResult(out_dir, slos, plan.label, rounds.results, floor, figure, why)


def _draw(out_dir: Path) -> tuple[Path | None, str]:
    from sim.slo_search.figure import draw_search  # the search: only when one runs

    try:
        return draw_search(out_dir), ""
    except (OSError, ValueError) as exc:
        return None, str(exc)
