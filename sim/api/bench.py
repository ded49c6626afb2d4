"""``kvsim bench``'s workflow: one side-by-side micro-benchmark (targets in ``sim.benches``).

Each target has flags of its own (its ``add_arguments``) and reads them in its
``main``; :class:`BenchArgs` carries them by name beside the target and the
``--plugin`` files, whose variants are checked before anything is timed.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from connectors import registry
from sim.config.plugins import command_plugins
from sim.conformance import refuse_wrong_plugins

__all__ = ["PLUGGABLE", "TARGETS", "BenchArgs", "bench"]

#: target name -> module under sim.benches
TARGETS: dict[str, str] = {
    "index": "index",
    "connectors": "connectors",
    "harness": "harness",
    "model": "model",
    "startup": "startup",
    "verdicts": "verdicts",
}

#: Targets that measure variants, so take ``--plugin FILE``.
PLUGGABLE = ("index", "connectors")


@dataclass(frozen=True)
class BenchArgs:
    """What ``kvsim bench TARGET`` was asked: the target, ``--plugin`` files (targets in
    :data:`PLUGGABLE`), and the target's own flags by name (its ``add_arguments``)."""

    target: str
    plugins: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> BenchArgs:
        own = {k: v for k, v in vars(args).items() if k not in ("command", "target", "plugin")}
        plugins = tuple(getattr(args, "plugin", ()))
        return cls(args.target, plugins, MappingProxyType(own))


def bench(args: BenchArgs) -> int:
    """Run the benchmark ``args.target`` (it prints its table); its exit code."""
    mod = importlib.import_module(f"sim.benches.{TARGETS[args.target]}")
    with command_plugins(args.plugins):
        if args.plugins:
            _refuse_wrong_plugins(args.target)
        ns = argparse.Namespace(target=args.target, plugin=list(args.plugins), **args.options)
        return int(mod.main(ns) or 0)


def _refuse_wrong_plugins(target: str) -> None:
    """Check every plug-in variant the bench could time before it times anything."""
    if target == "connectors":
        refuse_wrong_plugins([(n, {}) for n in registry.address_variant_names()])
    else:
        refuse_wrong_plugins(index=registry.index_variant_names())
