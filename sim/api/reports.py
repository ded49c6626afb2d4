"""Comparisons and figures of a run, from Python: what ``kvsim compare`` / ``kvsim plot`` show.

Arguments that do not fit the run (an axis it lacks, an unknown metric, a
baseline that is not among the values) raise :class:`~sim.errors.UsageError`
with one line; a directory that is not a run raises RunDirError.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sim.api.cli_args import FromCliArgs
from sim.errors import UsageError

if TYPE_CHECKING:
    from sim.analysis.compare import Cell, Comparison
    from sim.rundir.reader import RunResults

__all__ = [
    "PlotArgs",
    "PrReportArgs",
    "Report",
    "check_resamples",
    "compare",
    "plot",
    "pr_report",
    "with_warnings",
]


class OpenRun(Protocol):
    """What a comparison needs of an open run (sim.api.runs.Run, which uses this
    module: naming the protocol here keeps the two from importing each other)."""

    @property
    def results(self) -> RunResults: ...


def _results(run: OpenRun | str | Path) -> RunResults:
    """The results of a Run, or of the run directory at a path (read now)."""
    from sim.rundir.reader import load_results  # the CSV reader: not at import sim

    if isinstance(run, (str, Path)):
        return load_results(run)
    return run.results


def _same_value(have: str, wanted: str) -> bool:
    """``wanted`` names ``have`` (itself, or the same number written otherwise)."""
    from sim.analysis.compare import find_value  # numpy and the stats: not at import sim

    return find_value([have], wanted) is not None


@dataclass(frozen=True)
class Report:
    """A comparison of one run: the numbers, and the Markdown ``kvsim compare`` prints.

    ``str(report)`` is the Markdown; :meth:`cell` gives one value and its ratio
    to the baseline with the ratio's interval from the spread between repeats.
    """

    #: The comparison itself: levels, the values compared, metrics, cells.
    comparison: Comparison
    #: Markdown: one table per level, warnings of an incomplete run on top.
    markdown: str
    #: Completeness warnings of the run (empty: the run is complete).
    warnings: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.markdown

    def cell(self, value: str, metric: str, level: Sequence[Any] = ()) -> Cell:
        """The cell of ``by == value`` for ``metric`` at ``level`` (default: the only one).

        ``cell.value`` is the statistic, ``cell.ratio`` (None for the baseline) the
        ratio to the baseline with ``.low`` / ``.high`` bounds.
        """
        from sim.analysis.compare import find_value  # numpy and the stats: not at import sim

        comp = self.comparison
        if level:
            wanted = tuple(str(v) for v in level)
            same = (k for k in comp.levels if len(k) == len(wanted))
            key = next(
                (k for k in same if all(map(_same_value, k, wanted))),
                wanted,
            )
        else:
            if len(comp.levels) != 1:
                raise KeyError(f"{len(comp.levels)} levels; name one of {comp.levels}")
            key = comp.levels[0]
        if key not in comp.levels:
            raise KeyError(f"level {level!r} is not one of {comp.levels}")
        values = comp.variants.get(key, [])
        found = find_value(values, str(value))
        if found is None:
            raise KeyError(f"{comp.by}={value!r} is not one of {', '.join(values)}")
        if all(m.name != metric for m in comp.metrics):
            raise KeyError(
                f"metric {metric!r} is not compared; compared: "
                f"{', '.join(m.name for m in comp.metrics)}"
            )
        return comp.cells[(key, found, metric)]

    def rows(self) -> tuple[list[str], list[dict[str, Any]]]:
        """(columns, rows) of compare.csv: one row per level × value × metric."""
        from sim.analysis.report import comparison_rows  # numpy: not at import sim

        return comparison_rows(self.comparison)

    def write(self, stem: str | Path, *, force: bool = False) -> tuple[Path, Path]:
        """Write ``<stem>.md`` and ``<stem>.csv`` atomically; return their paths.

        A file already there is replaced only when a kvsim run lists it as its own, or
        with ``force`` (``sim.rundir.claim``); inside a run directory they are recorded
        as kvsim's (the run's ``--force`` may remove them)."""
        from sim.rundir.claim import claim_outputs  # the run directory's code: not at import sim

        # the run directory's code: not at import sim
        from sim.rundir.outputs import atomic_write_text, write_csv

        stem = Path(stem).absolute()
        md, csv = stem.with_name(stem.name + ".md"), stem.with_name(stem.name + ".csv")
        claim_outputs([md, csv], force)  # before writing: a crash leaves them listed
        atomic_write_text(md, self.markdown)
        write_csv(csv, *self.rows())
        return md, csv


def with_warnings(text: str, warnings: Sequence[str]) -> str:
    """Markdown ``text`` with a warning block after its first paragraph (the title)."""
    head, _, rest = text.partition("\n\n")
    notes = "\n".join(f"> **Warning:** {w}" for w in warnings)
    return f"{head}\n\n{notes}\n\n{rest}"


def check_resamples(bootstrap: int) -> None:
    """The one rule for a comparison's resample count (``--bootstrap``), for the command's
    arguments and this module's callers alike: a one-line UsageError outside 100 to 10^6."""
    if not 100 <= bootstrap <= 1_000_000:
        raise UsageError(f"--bootstrap {bootstrap}: allowed 100 to 1000000 resamples")


def compare(
    run: OpenRun | str | Path,
    by: str = "variant",
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    *,
    bootstrap: int = 2000,
    seed: int = 0,
) -> Report:
    """Values of axis ``by`` side by side at each level of the other axes.

    Each metric's value and its ratio to ``baseline`` (default: scalar, else the
    first value) with a 95% interval from the spread between repeats, paired by round
    (none with one repeat); ``bootstrap`` resamples of each run's own requests are only
    the floor under it (docs/statistics.md).
    ``metrics`` are names such as ``latency_p99_ms``, any summary.csv column, or
    ``TABLE.COLUMN:STAT[@COL=VALUE]``; by default the known ones the run has data for.
    """
    from sim.analysis.compare import compare as compare_results  # numpy: not at import sim
    from sim.analysis.completeness import completeness_warnings  # numpy: not at import sim
    from sim.analysis.hosts import host_warnings  # numpy: not at import sim
    from sim.analysis.report import comparison_markdown  # numpy: not at import sim

    check_resamples(bootstrap)
    res = _results(run)
    warnings = tuple(completeness_warnings(res) + host_warnings(res, by))
    try:
        comp = compare_results(res, baseline, metrics, bootstrap, seed, by)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    text = comparison_markdown(comp, str(res.dir.absolute()))
    return Report(comp, with_warnings(text, warnings) if warnings else text, warnings)


def plot(
    run: OpenRun | str | Path,
    out: str | Path | None = None,
    x: str | None = None,
    *,
    seed: int = 0,
    force: bool = False,
) -> list[Path]:
    """Draw every figure the run has data for (latency CDF, p99 against ``x``, GIL hold,
    engine steps, …) as PNGs into ``out`` (default ``<run>/figures``); return their paths.

    The figures of a run that is not complete, or whose points ran on different
    hardware, say so (see ``Run.warnings``). A file already there is replaced only
    when a kvsim run lists it as its own, or with ``force``; figures written inside
    the run are recorded as kvsim's (``--force`` may remove them)."""
    from sim.analysis.completeness import completeness_warnings  # numpy: not at import sim
    from sim.analysis.hosts import host_warnings  # numpy: not at import sim
    from sim.analysis.plot import plot_results  # numpy: not at import sim
    from sim.rundir.layout import figures_dir  # the run directory's code: not at import sim

    res = _results(run)
    where = Path(out) if out is not None else figures_dir(res.dir)
    notes = ["partial run"] * bool(completeness_warnings(res))
    notes += ["mixed hardware"] * bool(host_warnings(res))
    note = f"{' and '.join(notes)} (see warnings)" if notes else ""
    try:
        return plot_results(res, where, x, seed=seed, note=note, force=force)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


@dataclass(frozen=True)
class PlotArgs(FromCliArgs):
    """What ``kvsim plot`` was asked: ``plot(open_run(results), out, x, seed=, force=)``."""

    results: str
    out: str | None
    x: str | None
    seed: int
    force: bool


@dataclass(frozen=True)
class PrReportArgs(FromCliArgs):
    """What ``kvsim report`` was asked (the arguments of :func:`pr_report`)."""

    run: str
    baseline: str | None
    bench: Path | None
    out: Path | None
    seed: int
    force: bool


def pr_report(args: PrReportArgs) -> tuple[str, Path]:
    """Write the one Markdown page for a pull request (sim.analysis.pr_report) of run
    ``args.run``, with a ``kvsim bench connectors`` CSV's holds when ``args.bench``;
    the page and where it went (default ``<run>/report.md``)."""
    from sim.analysis.pr_report import bench_rows, pr_markdown  # numpy: not at import sim
    from sim.rundir.claim import claim_outputs  # the run directory's code: not at import sim
    from sim.rundir.layout import report_file  # the run directory's code: not at import sim
    from sim.rundir.outputs import atomic_write_text  # the run directory's code: not at import sim
    from sim.rundir.reader import load_results  # the run directory's code: not at import sim

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
    return text, out
