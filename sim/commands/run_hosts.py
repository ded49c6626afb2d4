"""Progress of a sweep whose runs execute on several hosts at once (``--executor ray``).

One bar for the sweep (point runs done of those to do) and one line per host:
which point × repeat it is measuring and how many of its requests are done.
A run whose host was lost and that is retried is reported as a line above.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["run_on_hosts"]


def run_on_hosts(
    cfg: Any,
    points: list[Any],
    args: argparse.Namespace,
    out_dir: Path,
    choice: Any,
    planned: dict[int, int],
    lock: Any = None,
) -> Any:
    """Run the sweep through ``choice`` (an ExecutorChoice) with a per-host display."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sim.sweep.experiment import plan_sweep, run_experiment

    todo = plan_sweep(cfg, points, out_dir).pending if args.resume else None
    runs = len(todo) if todo is not None else len(points) * cfg.repeats
    err = Console(stderr=True)
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bar:
        sweep = bar.add_task(f"sweep via {choice.name}", total=runs)
        host_task: dict[str, Any] = {}
        running: dict[tuple[int, int], str] = {}

        def on_host(rep: Any, host: str) -> None:
            running[(rep.point.index, rep.repeat)] = host
            desc = f"  {host}: {rep.label}"
            total = planned.get(rep.point.index, 0) or None
            if host not in host_task:
                host_task[host] = bar.add_task(desc, total=total)
            else:
                bar.reset(host_task[host], total=total, description=desc)

        def on_done(rep: Any, outcome: Any) -> None:
            host = running.pop((rep.point.index, rep.repeat), "")
            bar.advance(sweep)
            where = f" on {host}" if host else ""
            if outcome.status == "ok":
                bar.console.print(f"[green]✓[/] {rep.label}{where}  ({outcome.elapsed_s:.1f} s)")
            else:
                bar.console.print(
                    f"[red]✗[/] {rep.label}{where}  {outcome.status}: {outcome.error}"
                )
            if host in host_task:
                bar.update(host_task[host], description=f"  {host}: idle")

        def on_note(text: str) -> None:
            bar.console.print(f"[yellow]![/] {text}")

        result = run_experiment(
            cfg,
            points,
            Path(args.config),
            out_dir,
            resume=args.resume,
            overrides=args.set,
            executor=choice,
            on_host=on_host,
            on_note=on_note,
            on_point_done=on_done,
            on_rep_progress=lambda rep, done, total: _host_progress(
                bar, host_task, running, rep, done, total
            ),
            lock=lock,
        )
    return result


def _host_progress(
    bar: Any,
    host_task: dict[str, Any],
    running: dict[tuple[int, int], str],
    rep: Any,
    done: int,
    total: int,
) -> None:
    host = running.get((rep.point.index, rep.repeat))
    if host in host_task:
        bar.update(host_task[host], completed=done, total=total)
