"""``kvsim bench TARGET``: side-by-side micro-benchmarks (targets in ``sim.benches``)."""

from __future__ import annotations

import argparse
import importlib

from connectors import registry
from sim.commands.plugin_args import add_plugin_argument, command_plugins
from sim.conformance import refuse_wrong_plugins

HELP = "benchmark connector variants or index variants side by side"

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


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="target", metavar="TARGET", required=True)
    for name, module in TARGETS.items():
        mod = importlib.import_module(f"sim.benches.{module}")
        # argparse %-formats a sub-command's help (not its description): "10%" must be "10%%"
        tp = sub.add_parser(name, help=mod.HELP.replace("%", "%%"), description=mod.HELP)
        mod.add_arguments(tp)
        if name in PLUGGABLE:
            add_plugin_argument(tp)


def main(args: argparse.Namespace) -> int:
    mod = importlib.import_module(f"sim.benches.{TARGETS[args.target]}")
    with command_plugins(getattr(args, "plugin", [])):
        if getattr(args, "plugin", []):
            _refuse_wrong_plugins(args.target)
        return int(mod.main(args) or 0)


def _refuse_wrong_plugins(target: str) -> None:
    """Check every plug-in variant the bench could time before it times anything."""
    if target == "connectors":
        refuse_wrong_plugins([(n, {}) for n in registry.address_variant_names()])
    else:
        refuse_wrong_plugins(index=registry.index_variant_names())
