"""``kvsim run CONFIG``: run every point (each in its own process), print the comparison.

``--resume`` finishes an interrupted run (finished points are kept); ``--dry-run``
lists the points and what the run directory already holds, running nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sim.commands.plugin_args import add_plugin_argument
from sim.console import output_console

HELP = "run an experiment and print a comparison of its points"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from sim.analysis.condense import MAX_TABLE_ROWS

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
        "--all-rows",
        action="store_true",
        help="print every point's row of the end table (by default a sweep of more than "
        f"{MAX_TABLE_ROWS} points prints the first and last points of each variant)",
    )
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
    add_plugin_argument(p)
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

    from sim.commands.run_report import rerun_command

    cmd = shlex.join(rerun_command(args))
    return f"finished point runs are kept in {out}; `{cmd} --resume` runs the rest"


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


def _dry_run(plan: Any) -> int:
    from rich import box
    from rich.table import Table

    cfg, points, out_dir, counts = plan.config, plan.points, plan.out_dir, plan.requests
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
    out = output_console()
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


#: Above this many point runs, model-mode points that end well get no line each (a
#: line costs about as much as a point's outputs; the progress bar counts them).
_MANY = 100


def _run_with_progress(prepared: Any, args: argparse.Namespace) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from sim.sweep.session import run_planned

    plan = prepared.plan
    cfg, counts = plan.config, plan.requests
    runs = len(plan.to_run(args.resume))
    planned = plan.planned_requests(args.resume)
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
            if runs > _MANY and outcome.status == "ok" and rep.point.config.mode == "model":
                return  # hundreds of lines of milliseconds: the bar says it; failures print
            if outcome.status == "ok":
                bar.console.print(f"[green]✓[/] {rep.label}  ({outcome.elapsed_s:.1f} s)")
            else:
                bar.console.print(f"[red]✗[/] {rep.label}  {outcome.status}: {outcome.error}")

        return run_planned(
            prepared,
            source=Path(args.config),
            overrides=args.set,
            resume=args.resume,
            isolate=not args.in_process,
            on_point_start=on_point_start,
            progress=progress,
            on_point_done=on_point_done,
        )


def _say_removed(out_dir: Path, gone: list[Path]) -> None:
    """A resume that adds points removed compare.md and figures/ of the partial run."""
    if gone:
        names = ", ".join(str(p.relative_to(out_dir)) for p in gone)
        print(
            f"note: removed {names} (made from the partial run); run `kvsim compare` / "
            "`kvsim plot` again when the run is complete",
            file=sys.stderr,
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
    from contextlib import ExitStack

    with ExitStack() as plugins:
        return _main(args, plugins)


def _main(args: argparse.Namespace, plugins: Any) -> int:
    from sim.config import parse_config
    from sim.config.plugins import plugin_scope
    from sim.conformance import refuse_wrong_plugin_points
    from sim.rundir.guard import normalize_dir
    from sim.sweep.session import plan_run, prepared_run, run_planned, sweep_outcome

    if args.mode:  # --mode is --set mode=...; kept in args.set so a resume hint repeats it
        args.set = [*args.set, f"mode={args.mode}"]
    if args.audit:  # likewise --audit is --set gil.audit=pyspy
        args.set = [*args.set, "gil.audit=pyspy"]
    cfg, points = parse_config(args.config, args.set, args.plugin)
    plugins.enter_context(plugin_scope(cfg.plugins))  # their variants, until the command ends
    refuse_wrong_plugin_points(points)  # a plug-in computing wrong addresses is not measured
    check_baseline(args.baseline, points)
    # ``~`` expanded, ``..`` folded (no stray directories), absolute: never ambiguous.
    out_dir = normalize_dir(args.out or cfg.output_dir).absolute()
    plan = plan_run(cfg, points, out_dir)  # refuses model points the calibration lacks
    if args.dry_run:
        return _dry_run(plan)
    choice = _executor_choice(args)
    with prepared_run(plan, force=args.force, resume=args.resume, source=args.config) as ready:
        args.resolved_out = out_dir
        _say_removed(out_dir, ready.removed)
        if choice.name != "local" and not args.quiet:
            from sim.commands.run_hosts import run_on_hosts

            result = run_on_hosts(
                cfg, points, args, out_dir, choice, plan.requests, lock=ready.lock
            )
            outcome = sweep_outcome(ready.plan, result)
        elif args.quiet:
            outcome = run_planned(
                ready,
                source=Path(args.config),
                overrides=args.set,
                resume=args.resume,
                isolate=not args.in_process,
                executor=choice,
            )
        else:
            outcome = _run_with_progress(ready, args)
    from sim.commands.run_report import report

    return report(cfg, args, out_dir, outcome)
