"""``kvsim run``'s command line as a typed, immutable object, made once at the door.

The command reads its arguments from here, never from the argparse Namespace, and
writes nothing back: what it learns while it runs (the run directory a config
chose) is passed on as a value, so the rerun hints say exactly what was asked for.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

__all__ = ["RunArgs", "set_items"]


def set_items(args: argparse.Namespace) -> list[str]:
    """The ``--set`` items of a command line, ``--mode`` and ``--audit`` included."""
    items = list(args.set)
    if getattr(args, "mode", None):
        items.append(f"mode={args.mode}")
    if getattr(args, "audit", False):
        items.append("gil.audit=pyspy")
    return items


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
        return cls(
            config=args.config,
            sets=tuple(set_items(args)),
            plugins=tuple(args.plugin),
            out=args.out,
            force=args.force,
            resume=args.resume,
            dry_run=args.dry_run,
            baseline=args.baseline,
            in_process=args.in_process,
            quiet=args.quiet,
            all_rows=args.all_rows,
            executor=args.executor,
            address=args.address,
            retries=args.retries,
        )

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
