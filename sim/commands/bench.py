"""``kvsim bench TARGET``: side-by-side micro-benchmarks (sim.api.bench, sim.benches)."""

from __future__ import annotations

import argparse
import importlib

from sim.api.bench import PLUGGABLE, TARGETS, BenchArgs, bench
from sim.commands.common_args import add_plugin_argument


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="target", metavar="TARGET", required=True)
    for name, module in TARGETS.items():
        mod = importlib.import_module(f"sim.benches.{module}")
        # argparse %-formats a sub-command's help (not its description): "10%" must be "10%%"
        tp = sub.add_parser(name, help=mod.HELP.replace("%", "%%"), description=mod.HELP)
        mod.add_arguments(tp)
        if name in PLUGGABLE:
            add_plugin_argument(tp)


def main(cli_args: argparse.Namespace) -> int:
    return bench(BenchArgs.from_cli_args(cli_args))
