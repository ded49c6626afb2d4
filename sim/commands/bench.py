"""``kvsim bench TARGET``: side-by-side micro-benchmarks (targets in ``sim.benches``)."""

from __future__ import annotations

import argparse
import importlib

HELP = "benchmark connector variants or index variants side by side"

#: target name -> module under sim.benches
TARGETS: dict[str, str] = {
    "index": "index",
    "connectors": "connectors",
    "harness": "harness",
    "model": "model",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="target", metavar="TARGET", required=True)
    for name, module in TARGETS.items():
        mod = importlib.import_module(f"sim.benches.{module}")
        tp = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(tp)


def main(args: argparse.Namespace) -> int:
    mod = importlib.import_module(f"sim.benches.{TARGETS[args.target]}")
    return int(mod.main(args) or 0)
