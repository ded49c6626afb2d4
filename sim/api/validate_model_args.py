"""What ``kvsim validate-model`` was asked, as one typed object made at the door.

``validate_model(load(args.config, args.sets), args.out, force=args.force, …,
run=args.run, …)`` (sim.api.validate_model) runs what the command runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim.api.cli_args import namespace_fields, set_items

if TYPE_CHECKING:
    import argparse

__all__ = ["ValidateModelArgs"]


@dataclass(frozen=True)
class ValidateModelArgs:
    """The flags of sim.commands.validate_model.add_arguments; ``run`` is ``not --no-run``."""

    config: str
    #: ``--set`` items with ``--audit`` as one of them (both modes are run)
    sets: tuple[str, ...]
    out: str | None
    force: bool
    resume: bool
    run: bool
    boot: int
    repeats: int | None
    aa: bool
    level: str

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> ValidateModelArgs:
        return cls(**namespace_fields(cls, args, sets=set_items(args), run=not args.no_run))
