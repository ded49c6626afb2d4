"""``kvsim run``'s workflow: a config file read, checked, planned and run (``sim.api``).

:class:`RunArgs` is the command line as a typed, immutable object, made once at the
door: the command reads its arguments from here, never from the argparse Namespace,
and writes nothing back; what it learns while it runs (the run directory a config
chose) is passed on as a value, so the rerun hints say exactly what was asked for.
From Python, ``with plan_config(RunArgs(...)) as planned: planned.run(...)`` runs
what ``kvsim run`` runs.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sim.api.cli_args import namespace_fields, set_items
from sim.api.experiments import Experiment, open_config
from sim.errors import UsageError

if TYPE_CHECKING:  # the sweep loads only when a run is planned
    import argparse

    from sim.api.runs import Run
    from sim.config.experiment import Point
    from sim.events import SweepEvents
    from sim.sweep.executors import ExecutorChoice
    from sim.sweep.run_plan import RunPlan

__all__ = ["PlannedRun", "RunArgs", "check_baseline", "plan_config"]


@dataclass(frozen=True)
class RunArgs:
    """What ``kvsim run`` was asked (the flags of sim.commands.run.add_arguments)."""

    config: str
    #: ``--set`` items with ``--mode`` and ``--audit`` as items of their own
    sets: tuple[str, ...]
    plugins: tuple[str, ...]
    out: str | None
    force: bool
    resume: bool
    dry_run: bool
    baseline: str | None
    in_process: bool
    quiet: bool
    all_rows: bool
    executor: str
    address: str | None
    retries: int

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> RunArgs:
        return cls(**namespace_fields(cls, args, sets=set_items(args), plugins=tuple(args.plugin)))

    def rerun_command(self) -> list[str]:
        """``kvsim run CONFIG`` with this run's --set, --plugin and --out: the same run
        directory."""
        cmd = ["kvsim", "run", self.config]
        for s in self.sets:
            cmd += ["--set", s]
        for f in self.plugins:
            cmd += ["--plugin", f]
        if self.out:
            cmd += ["--out", self.out]
        return cmd


def check_baseline(baseline: str | None, points: Sequence[Point]) -> None:
    """Refuse a ``--baseline`` that is not among the variants, before any work is done."""
    if baseline is None:
        return

    variants = list(dict.fromkeys(str(p.axes.get("variant")) for p in points))
    if baseline not in variants:
        close = difflib.get_close_matches(baseline, variants, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(
            f"--baseline {baseline!r}: not a variant this config runs; {hint}"
            f"allowed: {', '.join(variants)}"
        )


@dataclass(frozen=True)
class PlannedRun:
    """A config read, checked and planned into its run directory: nothing written yet."""

    experiment: Experiment
    plan: RunPlan
    args: RunArgs
    #: A line when model-mode points combine features no validation covered.
    unvalidated: str | None

    @property
    def out_dir(self) -> Path:
        return self.plan.out_dir

    def executor(self) -> ExecutorChoice:
        """Where the points run; a one-line UsageError, before the run directory is
        touched, when that cannot be (no cluster, another interpreter elsewhere)."""
        from sim.sweep.executors import ExecutorChoice, ExecutorError, preflight  # the sweep

        args = self.args
        self._interpreter_here()
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

    def _interpreter_here(self) -> None:
        """A point under another interpreter (``interpreter:``) runs in a child on this
        machine: refused in one line where it would not be."""
        args, points = self.args, self.experiment.points
        if all(p.config.interpreter.is_default or p.config.mode != "real" for p in points):
            return
        if args.in_process:
            raise UsageError(
                "--in-process runs points in kvsim's own interpreter; the config "
                "names another (interpreter:), which needs a child process"
            )
        if args.executor != "local":
            raise UsageError(
                f"--executor {args.executor}: the config's interpreter: runs points "
                "under a python of this machine; run it with the local executor"
            )

    def run(
        self,
        choice: ExecutorChoice,
        display: Callable[[RunPlan], AbstractContextManager[SweepEvents | None]] | None = None,
    ) -> Run:
        """Run the plan through ``choice``; ``display`` (given the plan) is entered once
        the run directory is held and hears the sweep while it runs."""
        args = self.args
        return self.experiment.run(
            force=args.force,
            resume=args.resume,
            isolate=not args.in_process,
            events=display,
            executor=choice,
            plan=self.plan,
        )


@contextmanager
def plan_config(args: RunArgs) -> Iterator[PlannedRun]:
    """The config of ``args`` read, checked (a plug-in computing wrong addresses is not
    measured; ``--baseline`` among the variants; model points the calibration lacks) and
    planned; the config's plug-in variants stay registered until the block ends."""
    from sim.model.validated import unvalidated_note  # the model: only for a run

    with open_config(args.config, args.sets, args.plugins, quiet=args.quiet) as exp:
        check_baseline(args.baseline, exp.points)
        plan = exp.plan(args.out)  # refuses model points the calibration lacks
        yield PlannedRun(exp, plan, args, unvalidated_note(exp.points))
