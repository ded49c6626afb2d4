"""``kvsim compare``'s workflow: one run's variants side by side, or two runs' shared points.

:func:`compare_runs` takes :class:`CompareArgs` (what the command line asked, checked
at the door) and writes ``compare.md`` / ``.csv`` (or ``--out``); with two runs and
``fail_if`` rules it judges B against A (sim.analysis.gate). One run alone is
:func:`sim.compare`'s comparison; this adds the file, the GIL on/off lines, the pairing
of two runs and the gate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sim.analysis.compare import compare
from sim.analysis.completeness import completeness_warnings
from sim.analysis.crossrun import (
    RUN_AXIS,
    Pairing,
    host_difference,
    missing_lines,
    pair_runs,
    unpaired_lines,
)
from sim.analysis.gate import GateResult, Rule, judge, parse_rule
from sim.analysis.gil_onoff import gil_onoff_report
from sim.analysis.hosts import host_warnings
from sim.analysis.manifest_diff import manifest_differences
from sim.analysis.report import comparison_markdown
from sim.api.cli_args import namespace_fields
from sim.api.reports import Report, check_resamples, with_warnings
from sim.api.reports import compare as compare_one
from sim.api.runs import open_run
from sim.errors import RunDirError, UsageError
from sim.rundir.layout import compare_stem
from sim.rundir.reader import RunResults, load_results

if TYPE_CHECKING:
    import argparse

__all__ = ["CompareArgs", "Compared", "NothingToCompare", "compare_runs"]


@dataclass(frozen=True)
class CompareArgs:
    """What ``kvsim compare`` was asked (sim.commands.compare.add_arguments)."""

    #: One run directory, or two (RUN_A RUN_B: B against A).
    results: tuple[str, ...]
    by: str | None
    baseline: str | None
    metrics: tuple[str, ...] | None
    bootstrap: int
    seed: int
    all_rows: bool
    fail_if: tuple[str, ...]
    out: str | None
    force: bool

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> CompareArgs:
        metric = tuple(args.metric) if args.metric else None
        return cls(**namespace_fields(cls, args, metrics=metric)).checked()

    def checked(self) -> CompareArgs:
        """Itself, or a one-line UsageError before anything is read."""
        check_resamples(self.bootstrap)
        if len(self.results) > 2:
            raise UsageError(
                f"compare takes one run directory or two (RUN_A RUN_B), got {len(self.results)}"
            )
        if self.fail_if:
            if len(self.results) != 2:
                raise UsageError(
                    "--fail-if compares two runs: kvsim compare BASE NEW --fail-if RULE"
                )
            _rules(self.fail_if)  # a malformed rule stops before anything is read
        return self


class NothingToCompare(UsageError):
    """Two runs with no point in common; ``preface`` says how they differ."""

    def __init__(self, preface: str, message: str) -> None:
        super().__init__(message)
        self.preface = preface


@dataclass(frozen=True)
class Compared:
    """A comparison written: the report and its files; then the lines said after it."""

    report: Report
    md: Path
    csv: Path
    #: One run: what the GIL's on/off sweep showed (empty when it did not sweep it).
    notes: tuple[str, ...] = ()
    #: Two runs with rules: the gate's lines, its verdict last; ``failed``: a rule broke.
    gate: tuple[str, ...] = ()
    failed: bool = False


def compare_runs(args: CompareArgs, warn: Callable[[str], None] = lambda _line: None) -> Compared:
    """Compare and write (see the module); ``warn`` hears each warning about a run as it is
    read, before anything can fail. UsageError/RunDirError of one line; NothingToCompare
    when two runs share no point."""
    args = args.checked()
    return _one(args, warn) if len(args.results) == 1 else _two(args, warn)


def _warn(res: RunResults, by: str | None, warn: Callable[[str], None]) -> list[str]:
    lines = completeness_warnings(res) + host_warnings(res, by or "variant")
    if res.note:
        warn(res.note)
    for line in lines:
        warn(f"warning: {line}")
    return lines


def _one(args: CompareArgs, warn: Callable[[str], None]) -> Compared:
    run = open_run(args.results[0])
    _warn(run.results, args.by, warn)  # before anything can fail, as for two runs
    report = compare_one(
        run,
        args.by or "variant",
        args.baseline,
        args.metrics,
        bootstrap=args.bootstrap,
        seed=args.seed,
    )
    stem = Path(args.out) if args.out else compare_stem(run.dir)
    with _writing(stem):
        md, csv = report.write(stem, force=args.force)
    notes = gil_onoff_report(run.dir, args.bootstrap, args.seed)  # swept the GIL on, off
    return Compared(report, md, csv, notes=tuple(notes))


@contextmanager
def _writing(stem: Path) -> Iterator[None]:
    """An --out that cannot be written is the user's to fix (exit 2, as ``kvsim run``
    says of its own): exit 1 is the gate's, a regression's alone."""
    try:
        yield
    except OSError as exc:
        where = Path(exc.filename).parent if exc.filename else stem.parent
        raise RunDirError(f"{where}: cannot write ({exc.strerror or exc})") from None


def _two(args: CompareArgs, warn: Callable[[str], None]) -> Compared:
    a, b = (load_results(p) for p in args.results)
    if a.dir.resolve() == b.dir.resolve():
        raise UsageError(f"{a.dir}: RUN_A and RUN_B are the same directory")
    warnings = _warn(a, None, warn) + _warn(b, None, warn)
    pairing = pair_runs(a, b)
    la, lb = pairing.labels
    diffs = manifest_differences(a.manifest, b.manifest)
    hosts = host_difference(a, b)
    diffs += [hosts] if hosts else []
    lines = [f"A = {la}: {a.dir.absolute()}", f"B = {lb}: {b.dir.absolute()}", ""]
    if diffs:
        lines.append("What differs between the runs (A → B):")
        lines += [f"- {what}: {va} → {vb}" for what, va, vb in diffs]
    else:
        lines.append("The runs agree on commit, machine, versions, executor, hosts and config.")
    lines += _across_lines(pairing)
    left_out = unpaired_lines(pairing)
    if left_out:
        lines += [
            "",
            f"Not compared — {len(left_out)} point(s) have no twin with the same "
            f"{', '.join(pairing.axes)} in the other run:",
        ]
        lines += [f"- {x}" for x in left_out]
    preface = "\n".join(lines)
    if pairing.combined is None:
        raise NothingToCompare(
            preface,
            f"no point of {la} has the same axis values ({', '.join(pairing.axes)}) as a "
            f"point of {lb}; nothing to compare{_apart(a, b, pairing.axes)}",
        )
    by = args.by or RUN_AXIS
    if by != RUN_AXIS and by not in pairing.combined.axes:
        raise UsageError(f"--by {by!r} is not an axis of these runs: {', '.join(pairing.axes)}")
    baseline = args.baseline or (la if by == RUN_AXIS else None)
    try:
        comp = compare(
            pairing.combined,
            baseline,
            args.metrics,
            args.bootstrap,
            args.seed,
            by,
            paired=by != RUN_AXIS,  # two runs were not made in the same rounds
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    # The gate's rules are judged before anything is written: a metric the runs lack is
    # one line, not an error after the whole comparison was printed and saved.
    gate = _judge(args, pairing, (a, b)) if args.fail_if else None
    text = comparison_markdown(comp, f"{la} vs {lb}")
    head, _, rest = text.partition("\n\n")
    text = f"{head}\n\n```\n{preface}\n```\n\n{rest}"
    if warnings:
        text = with_warnings(text, warnings)
    report = Report(comp, text, tuple(warnings))
    stem = (Path(args.out) if args.out else compare_stem(b.dir, a.dir.name)).absolute()
    with _writing(stem):
        md, csv = report.write(stem, force=args.force)
    if gate is None:
        return Compared(report, md, csv)
    said = [*gate.lines, f"{'FAILED' if gate.failed else 'passed'} ({lb} against {la})"]
    return Compared(report, md, csv, gate=tuple(said), failed=gate.failed)


def _rules(fail_if: Sequence[str]) -> list[Rule]:
    try:
        return [parse_rule(r) for r in fail_if]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _judge(args: CompareArgs, pairing: Pairing, runs: Sequence[RunResults]) -> GateResult:
    """The --fail-if rules on the two runs' shared points (sim.analysis.gate); a point of
    A that B lacks fails the gate."""
    rules = _rules(args.fail_if)
    metrics = list(dict.fromkeys(r.metric for r in rules))
    la, lb = pairing.labels
    assert pairing.combined is not None
    try:
        comp = compare(
            pairing.combined, la, metrics, args.bootstrap, args.seed, RUN_AXIS, paired=False
        )
        planned = min(int(r.manifest.get("repeats") or 1) for r in runs)
        return judge(comp, rules, la, lb, planned, missing_lines(pairing, runs[1]))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


#: Where a real run is set against a model run of its points properly: both made, point
#: by point, and the prediction scored.
_VALIDATE = (
    "`kvsim validate-model CONFIG` runs both modes on the config's points and scores the "
    "model's prediction (docs/model-mode.md)"
)


def _across_lines(pairing: Pairing) -> list[str]:
    """What the pairs were made across (sim.analysis.crossrun.pair_runs), when not alike."""
    if not pairing.across:
        return []
    a = ", ".join(f"{axis}={va}" for axis, va, _ in pairing.across)
    b = ", ".join(f"{axis}={vb}" for axis, _, vb in pairing.across)
    out = [
        "",
        f"Compared across a setting: A: {a}, B: {b} (each run's only value), the rest alike.",
    ]
    if any(axis == "mode" for axis, _, _ in pairing.across):
        out.append(f"A real run against a model run: B's figures set beside A's; {_VALIDATE}.")
    return out


def _apart(a: RunResults, b: RunResults, axes: list[str]) -> str:
    """Which axes keep two runs apart, and how to give them a point in common."""
    parts = []
    for axis in axes:
        va, vb = (
            sorted({r.get(axis, "") for r in res.summary} if axis in res.axes else {"(not swept)"})
            for res in (a, b)
        )
        if not set(va) & set(vb):
            parts.append(f"{axis}: {', '.join(va)} in A, {', '.join(vb)} in B")
    if not parts:
        return ""
    if any(p.startswith("mode:") for p in parts):
        return f" ({'; '.join(parts)}); for a real run against a model run, {_VALIDATE}"
    return (
        f" ({'; '.join(parts)}); rerun one of them with the other's values too, e.g. "
        "--set sweep.connector.workers=[1,2]"
        if any(p.startswith("workers:") for p in parts)
        else f" ({'; '.join(parts)})"
    )
