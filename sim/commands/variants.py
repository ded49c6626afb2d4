"""``kvsim variants [NAME]``: every registered variant, or one variant and its options."""

from __future__ import annotations

import argparse

from sim.api.variants import VariantsArgs, variants
from sim.commands.common_args import add_plugin_argument


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="a variant: print its description and every option (type, default, meaning)",
    )
    add_plugin_argument(p)


def main(cli_args: argparse.Namespace) -> int:
    for line in variants(VariantsArgs.from_cli_args(cli_args)):
        print(line)
    return 0
