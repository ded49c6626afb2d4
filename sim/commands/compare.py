"""``kvsim compare RUN_DIR [RUN_B]``: variants side by side per level, with intervals from
the spread between repeats (docs/statistics.md); with two run directories, the same
points of two runs side by side."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sim import api
from sim.analysis.compare import compare
from sim.analysis.completeness import completeness_warnings
from sim.analysis.condense import MAX_LEVELS, condense_markdown
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
from sim.analysis.report import comparison_markdown, comparison_rows
from sim.api.reports import with_warnings
from sim.errors import RunDirError, UsageError
from sim.rundir.claim import claim_outputs
from sim.rundir.layout import compare_stem
from sim.rundir.outputs import atomic_write_text, write_csv
from sim.rundir.reader import RunResults, load_results

HELP = (
    "compare variants of a finished run, or the same points of two runs (before/after), "
    "with 95% intervals from the spread between repeats"
)


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


def _error(msg: str) -> Exception:
    return UsageError(msg)


def _warn(res: RunResults, by: str | None = None) -> list[str]:
    lines = completeness_warnings(res) + host_warnings(res, by or "variant")
    if res.note:
        print(res.note, file=sys.stderr)
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)
    return lines


def _print(text: str, md: Path, csv: Path, all_rows: bool) -> None:
    """Print the Markdown (only its first and last levels when there are many, unless
    ``all_rows``: the file ``md`` has them all), then where it was written."""
    where = f"; {md} has every one, and --all-rows prints them"
    print(condense_markdown(text, None if all_rows else MAX_LEVELS, where), end="")
    print(f"\n(written: {md}, {csv})")


def _write(
    stem: Path,
    text: str,
    cols: list[str],
    rows: list[dict[str, Any]],
    all_rows: bool,
    force: bool,
) -> None:
    stem = stem.absolute()
    md, csv = stem.with_name(stem.name + ".md"), stem.with_name(stem.name + ".csv")
    with _writing(stem):
        claim_outputs([md, csv], force)
        atomic_write_text(md, text)
        write_csv(csv, cols, rows)
    _print(text, md, csv, all_rows)


@contextmanager
def _writing(stem: Path) -> Iterator[None]:
    """An --out that cannot be written is the user's to fix (exit 2, as ``kvsim run``
    says of its own): exit 1 is the gate's, a regression's alone."""
    try:
        yield
    except OSError as exc:
        where = Path(exc.filename).parent if exc.filename else stem.parent
        raise RunDirError(f"{where}: cannot write ({exc.strerror or exc})") from None


def _one(args: argparse.Namespace) -> int:
    run = api.open_run(args.results[0])
    _warn(run.results, args.by)  # before anything can fail, as for two runs
    report = api.compare(
        run,
        args.by or "variant",
        args.baseline,
        args.metric,
        bootstrap=args.bootstrap,
        seed=args.seed,
    )
    stem = Path(args.out) if args.out else compare_stem(run.dir)
    with _writing(stem):
        md, csv = report.write(stem, force=args.force)
    _print(report.markdown, md, csv, args.all_rows)
    for line in gil_onoff_report(run.dir, args.bootstrap, args.seed):  # swept the GIL on, off
        print(line)
    return 0


def _two(args: argparse.Namespace) -> int:
    a, b = (load_results(p) for p in args.results)
    if a.dir.resolve() == b.dir.resolve():
        raise _error(f"{a.dir}: RUN_A and RUN_B are the same directory")
    warnings = _warn(a) + _warn(b)
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
        print(preface)
        raise _error(
            f"no point of {la} has the same axis values ({', '.join(pairing.axes)}) as a "
            f"point of {lb}; nothing to compare{_apart(a, b, pairing.axes)}"
        )
    by = args.by or RUN_AXIS
    if by != RUN_AXIS and by not in pairing.combined.axes:
        raise _error(f"--by {by!r} is not an axis of these runs: {', '.join(pairing.axes)}")
    baseline = args.baseline or (la if by == RUN_AXIS else None)
    try:
        comp = compare(
            pairing.combined,
            baseline,
            args.metric,
            args.bootstrap,
            args.seed,
            by,
            paired=by != RUN_AXIS,  # two runs were not made in the same rounds
        )
    except ValueError as exc:
        raise _error(str(exc)) from None
    # The gate's rules are judged before anything is written: a metric the runs lack is
    # one line, not an error after the whole comparison was printed and saved.
    gate = _judge(args, pairing, (a, b)) if args.fail_if else None
    text = comparison_markdown(comp, f"{la} vs {lb}")
    head, _, rest = text.partition("\n\n")
    text = f"{head}\n\n```\n{preface}\n```\n\n{rest}"
    if warnings:
        text = with_warnings(text, warnings)
    cols, rows = comparison_rows(comp)
    stem = Path(args.out) if args.out else compare_stem(b.dir, a.dir.name)
    _write(stem, text, cols, rows, args.all_rows, args.force)
    if gate is not None:
        print()
        for line in gate.lines:
            print(f"gate: {line}")
        print(f"gate: {'FAILED' if gate.failed else 'passed'} ({lb} against {la})")
        return 1 if gate.failed else 0
    return 0


def _rules(args: argparse.Namespace) -> list[Rule]:
    try:
        return [parse_rule(r) for r in args.fail_if]
    except ValueError as exc:
        raise _error(str(exc)) from None


def _judge(args: argparse.Namespace, pairing: Pairing, runs: Sequence[RunResults]) -> GateResult:
    """The --fail-if rules on the two runs' shared points (sim.analysis.gate); a point of
    A that B lacks fails the gate."""
    rules = _rules(args)
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
        raise _error(str(exc)) from None


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


def main(args: argparse.Namespace) -> int:
    if not 100 <= args.bootstrap <= 1_000_000:
        raise _error(f"--bootstrap {args.bootstrap}: allowed 100 to 1000000 resamples")
    if len(args.results) > 2:
        raise _error(
            f"compare takes one run directory or two (RUN_A RUN_B), got {len(args.results)}"
        )
    if args.fail_if:
        if len(args.results) != 2:
            raise _error("--fail-if compares two runs: kvsim compare BASE NEW --fail-if RULE")
        _rules(args)  # a malformed rule stops before anything is read
    return _one(args) if len(args.results) == 1 else _two(args)
