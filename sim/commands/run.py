"""``kvsim run CONFIG``: run every point (each in its own process), print the comparison.

``--resume`` finishes an interrupted run (finished points are kept); ``--dry-run``
lists the points and what the run directory already holds, running nothing.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

HELP = "run an experiment and print a comparison of its points"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="experiment YAML file")
    p.add_argument(
        "--out",
        help="run directory (default: output.dir of the config, else results/<name>; "
        "a relative path is taken from the working directory)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--force", action="store_true", help="replace a previous run in that directory"
    )
    mode.add_argument(
        "--resume",
        action="store_true",
        help="finish a previous run of the same config: points already done are skipped",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list the points and which are already done; run nothing, write nothing",
    )
    p.add_argument("--baseline", help="variant the ratios are taken against (default: scalar)")
    p.add_argument(
        "--in-process",
        action="store_true",
        help="run points in this process instead of one child process each "
        "(for debuggers; a crash then ends the sweep)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display or table")
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where point runs execute: local (default; one after the other here) or ray "
        "(one Ray task per point × repeat on hosts offering the kvsim_host resource)",
    )
    p.add_argument(
        "--address",
        help="Ray cluster address HEAD:PORT for --executor ray (default: $RAY_ADDRESS, else auto)",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=2,
        metavar="N",
        help="--executor ray: times a run whose host is lost is submitted again (2)",
    )
    add_set_argument(p)
    p.add_argument(
        "--mode",
        choices=("real", "model"),
        help="override the config's mode: real threads on this machine, or the calibrated "
        "discrete-event model (docs/model-mode.md)",
    )


def add_set_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--audit",
        action="store_true",
        help="audit the GIL meter with py-spy on every point (same as --set gil.audit=pyspy)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config field (repeatable), e.g. --set connector.workers=8 or "
        "--set sweep.connector.variant=[scalar,numpy]; a swept field gets that value only",
    )


def interrupt_hint(args: argparse.Namespace) -> str:
    """What to say after Ctrl-C: finished points are kept, and how to finish the run."""
    out = getattr(args, "resolved_out", None)
    if out is None:
        return ""
    import shlex

    cmd = ["kvsim", "run", args.config]
    for s in args.set:
        cmd += ["--set", s]
    if args.out:
        cmd += ["--out", args.out]
    return f"finished point runs are kept in {out}; `{shlex.join(cmd)} --resume` runs the rest"


def check_baseline(baseline: str | None, points: list[Any]) -> None:
    """Refuse a ``--baseline`` that is not among the variants, before any work is done."""
    if baseline is None:
        return
    import difflib

    from sim.errors import UsageError

    variants = list(dict.fromkeys(str(p.axes.get("variant")) for p in points))
    if baseline not in variants:
        close = difflib.get_close_matches(baseline, variants, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(
            f"--baseline {baseline!r}: not a variant this config runs; {hint}"
            f"allowed: {', '.join(variants)}"
        )


def _planned_counts(points: list[Any]) -> dict[int, int]:
    """Requests each point will run, by point index: from the trace replay when there is
    one (its limit, less the requests with nothing to load), else ``workload.requests``."""
    from sim.workload.plan import planned_requests

    memo: dict[str, Any] = {}
    return {p.index: planned_requests(p.config, memo)[0] for p in points}


def _dry_run(cfg: Any, points: list[Any], out_dir: Path) -> int:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from sim.sweep.experiment import plan_sweep

    plan = plan_sweep(cfg, points, out_dir)
    counts = _planned_counts(points)
    table = Table(
        box=box.SIMPLE_HEAD, title=f"kvsim · {cfg.name} · {out_dir}", title_justify="left"
    )
    widest = max((len(p.label) for p in points), default=5)
    for col in ("#", "point", "repeat", "requests", "state"):
        table.add_column(
            col,
            justify="right" if col in ("#", "repeat", "requests") else "left",
            min_width=widest if col == "point" else None,
            no_wrap=col != "state",
        )
    colour = {
        "done": "green",
        "failed": "red",
        "interrupted": "yellow",
        "damaged": "red",
        "pending": "default",
    }
    for run in plan.runs:
        state = f"[{colour[run.state]}]{run.state}[/]"
        if run.error:
            state += f" ({run.error})"
        table.add_row(
            str(run.rep.point.index),
            run.rep.point.label,
            str(run.rep.repeat),
            str(counts[run.rep.point.index]),
            state,
        )
    out = Console()
    out.print(table)
    from sim.rundir.state import run_state_note

    note = run_state_note(out_dir)
    if note:
        out.print(note, soft_wrap=True, markup=False)
    todo = len(plan.pending)
    if plan.existing and plan.difference:
        out.print(
            f"{out_dir} holds a run of a different config ({plan.difference}): "
            "--resume would refuse; --force replaces it"
        )
    elif plan.existing and not todo:
        out.print(f"all {len(plan.runs)} point run(s) are done in {out_dir}")
    elif plan.existing:
        out.print(
            f"{todo} of {len(plan.runs)} point run(s) to do in {out_dir}; "
            "`--resume` runs only those"
        )
    else:
        out.print(f"{todo} point run(s) to do; nothing has run in {out_dir} yet")
    return 0


def _run_with_progress(
    cfg: Any, points: list[Any], args: argparse.Namespace, out_dir: Path, lock: Any
):
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from sim.sweep.experiment import plan_sweep, run_experiment

    todo = plan_sweep(cfg, points, out_dir).pending if args.resume else None
    runs = len(todo) if todo is not None else len(points) * cfg.repeats
    counts = _planned_counts(points)
    planned = (
        sum(counts[r.rep.point.index] for r in todo)
        if todo is not None
        else sum(counts.values()) * cfg.repeats
    )
    err = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} req"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err,
        transient=False,
    ) as bar:
        # The bar's task appears with the first point: an error before it (an unusable
        # output directory) then leaves no "starting 0/0 req" line behind.
        task: Any = None
        state = {"n": 0, "base": 0, "current": 0}

        def on_point_start(point: Any, rep: int) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task("starting", total=planned)
            state["n"] += 1
            state["current"] = counts[point.index]
            rep_txt = f" rep {rep}" if cfg.repeats > 1 else ""
            bar.update(task, description=f"[{state['n']}/{runs}] {point.label}{rep_txt}")

        def progress(done: int, total: int) -> None:
            if total != state["current"]:
                bar.update(task, total=bar.tasks[0].total + total - state["current"])
                state["current"] = total
            bar.update(task, completed=state["base"] + done)

        def on_point_done(rep: Any, outcome: Any) -> None:
            state["base"] += state["current"]
            bar.update(task, completed=state["base"])
            if outcome.status == "ok":
                bar.console.print(f"[green]✓[/] {rep.label}  ({outcome.elapsed_s:.1f} s)")
            else:
                bar.console.print(f"[red]✗[/] {rep.label}  {outcome.status}: {outcome.error}")

        return run_experiment(
            cfg,
            points,
            Path(args.config),
            out_dir,
            on_point_start,
            progress,
            resume=args.resume,
            isolate=not args.in_process,
            on_point_done=on_point_done,
            overrides=args.set,
            lock=lock,
        )


def _drop_stale(cfg: Any, points: list[Any], out_dir: Path) -> None:
    """A resume that will add points makes compare.md and figures/ of the partial run stale."""
    from sim.rundir.derived import remove_stale_derived
    from sim.sweep.experiment import plan_sweep

    if not plan_sweep(cfg, points, out_dir).pending:
        return
    gone = remove_stale_derived(out_dir)
    if gone:
        names = ", ".join(str(p.relative_to(out_dir)) for p in gone)
        print(
            f"note: removed {names} (made from the partial run); run `kvsim compare` / "
            "`kvsim plot` again when the run is complete",
            file=sys.stderr,
        )


def _noise_floor(rows: list[dict[str, Any]]) -> float:
    vals = []
    for r in rows:
        try:
            vals.append(float(r.get("noise_floor_p99_ms", "nan")))
        except (TypeError, ValueError):
            continue
    vals = [v for v in vals if not math.isnan(v)]
    return max(vals) if vals else math.nan


def _as_float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _print_behind(out: Any, rows: list[dict[str, Any]], axes: list[str]) -> None:
    """One warning per point where the harness fell behind its planned arrivals or the
    meter exceeds the py-spy audit; one line per reason the audit could not run."""
    from sim.analysis.audit import audit_note, audit_problems
    from sim.analysis.behind import behind_note

    for r in rows:
        label = " · ".join(f"{a}={r.get(a, '')}" for a in axes) or "the point"
        for note in (behind_note(label, r), audit_note(label, r)):
            if note:
                out.print(f"[yellow]warning:[/yellow] {note}", highlight=False)
    for why in audit_problems(rows):
        out.print(f"[yellow]warning:[/yellow] GIL audit not run: {why}", highlight=False)
    audited = [r for r in rows if str(r.get("audit_status", "")) == "ok"]
    if audited:
        figures = ", ".join(
            f"{r.get('variant')} {_as_float(r.get('audit_vs_meter')):.2f}" for r in audited
        )
        cpu = max(_as_float(r.get("audit_pyspy_cpu_frac")) for r in audited)
        out.print(
            f"GIL audit (py-spy): audit_vs_meter {figures}; py-spy used up to "
            f"{100 * cpu:.0f} % of a core",
            highlight=False,
        )


def _executor_choice(args: argparse.Namespace) -> Any:
    """The executor chosen on the command line; one-line UsageError when it is not usable."""
    from sim.errors import UsageError
    from sim.sweep.executors import ExecutorChoice, ExecutorError, preflight

    if args.executor != "local" and args.in_process:
        raise UsageError(
            f"--in-process runs points here; it cannot go with --executor {args.executor}"
        )
    try:
        choice = ExecutorChoice(args.executor, args.address, args.retries)
    except ExecutorError as exc:
        raise UsageError(f"--executor {args.executor}: {exc}") from None
    preflight(choice)  # no cluster: say so before the run directory is touched
    return choice


def main(args: argparse.Namespace) -> int:
    from sim.config import parse_config
    from sim.rundir.guard import normalize_dir, open_run_dir

    if args.mode:  # --mode is --set mode=...; kept in args.set so a resume hint repeats it
        args.set = [*args.set, f"mode={args.mode}"]
    if args.audit:  # likewise --audit is --set gil.audit=pyspy
        args.set = [*args.set, "gil.audit=pyspy"]
    cfg, points = parse_config(args.config, args.set)
    check_baseline(args.baseline, points)
    if any(p.config.mode == "model" for p in points):
        from sim.model.coverage import check_points

        check_points(points)  # refuse what the calibration does not cover, before anything
    # ``~`` expanded, ``..`` folded (no stray directories), absolute: never ambiguous.
    out_dir = normalize_dir(args.out or cfg.output_dir).absolute()
    if args.dry_run:
        return _dry_run(cfg, points, out_dir)
    from sim.store.memory import check_points

    check_points(args.config, points)  # a real-store point that cannot fit is refused here
    choice = _executor_choice(args)
    lock = open_run_dir(out_dir, args.force, args.resume)
    try:
        if args.resume:
            from sim.sweep.experiment import check_resumable

            check_resumable(cfg, out_dir)
        args.resolved_out = out_dir
        if args.resume:
            _drop_stale(cfg, points, out_dir)

        if choice.name != "local" and not args.quiet:
            from sim.commands.run_hosts import run_on_hosts

            result = run_on_hosts(
                cfg, points, args, out_dir, choice, _planned_counts(points), lock=lock
            )
        elif args.quiet:
            from sim.sweep.experiment import run_experiment

            result = run_experiment(
                cfg,
                points,
                Path(args.config),
                out_dir,
                resume=args.resume,
                isolate=not args.in_process,
                overrides=args.set,
                executor=choice,
                lock=lock,
            )
        else:
            result = _run_with_progress(cfg, points, args, out_dir, lock)
    finally:
        lock.release()
    return _report(cfg, points, args, out_dir, result)


def _report(cfg: Any, points: list[Any], args: argparse.Namespace, out_dir: Path, result) -> int:
    from sim.analysis.report import comparison_table, pick_baseline
    from sim.rundir.layout import (
        LOG_FILE,
        MANIFEST_FILE,
        POINTS_DIR,
        REQUESTS_FILE,
        SUMMARY_FILE,
        SUMMARY_REPEATS_FILE,
    )

    rows = result.summary_rows
    if not args.quiet:
        from rich.console import Console

        # Piped into a file or a log, keep the whole table rather than 80 columns of it.
        out = Console() if sys.stdout.isatty() else Console(width=120)
        err = Console(stderr=True)
        baseline = pick_baseline(rows, args.baseline)
        if args.baseline and baseline is None:
            err.print(f"warning: baseline {args.baseline!r} is not among the variants run")
        if result.skipped:
            out.print(f"resumed: {result.skipped} point run(s) were already done and kept")
        out.print(comparison_table(rows, result.axes, baseline, f"kvsim · {cfg.name}"))
        _print_behind(out, rows, result.axes)
        from sim.analysis.stage_report import has_stages, stage_table

        if has_stages(rows):
            out.print(stage_table(rows, result.axes, "where the hold goes"))
        nf = _noise_floor(rows)
        files = ", ".join(
            (REQUESTS_FILE, SUMMARY_FILE, SUMMARY_REPEATS_FILE, MANIFEST_FILE, f"{POINTS_DIR}/")
        )
        out.print(f"harness noise floor: p99 ≤ {nf:.3f} ms · results in {out_dir}/ ({files})")
    failed = 0
    for r in rows:
        try:
            failed += int(float(r.get("failed") or 0))
        except ValueError:
            continue
    if failed:
        print(
            f"warning: {failed} request(s) failed; see the error column of "
            f"{out_dir / REQUESTS_FILE}",
            file=sys.stderr,
        )
    if result.crashed_points:
        from sim.sweep.experiment import plan_sweep

        for run in plan_sweep(cfg, points, out_dir).pending:
            log = run.rep.dir / LOG_FILE
            print(f"error: {run.rep.label}: {run.state}: {run.error} (log: {log})", file=sys.stderr)
    if result.empty_points:
        print(f"error: {len(result.empty_points)} point(s) completed no request", file=sys.stderr)
    return 1 if result.failed_points else 0
