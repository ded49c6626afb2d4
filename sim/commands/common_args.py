"""Flags several commands share: ``--set`` (with ``--audit`` and ``--mode``, items of
their own) and ``--plugin FILE``, the one way a command is given a user's variant file."""

from __future__ import annotations

import argparse

__all__ = ["add_mode_argument", "add_plugin_argument", "add_set_argument"]


def add_plugin_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="FILE",
        help="a Python file registering your own variants (repeatable; "
        "docs/your-connector.md), as `plugins: [FILE]` in a config",
    )


def add_mode_argument(p: argparse.ArgumentParser) -> None:
    """``--mode``: a ``--set`` item with a flag of its own (sim.api.cli_args.set_items)."""
    p.add_argument(
        "--mode",
        choices=("real", "model"),
        help="override the config's mode: real threads on this machine, or the calibrated "
        "discrete-event model (docs/model-mode.md); same as --set mode=...",
    )


def add_set_argument(p: argparse.ArgumentParser) -> None:
    """``--set``, and ``--audit``, a ``--set`` item with a flag of its own
    (sim.api.cli_args.set_items)."""
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
