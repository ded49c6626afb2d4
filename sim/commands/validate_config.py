"""``kvsim validate CONFIG``: check a config without running it (sim.api.validate_config)."""

from __future__ import annotations

import argparse

from sim.api.validate_config import ValidateConfigArgs, validate_config
from sim.commands.common_args import add_mode_argument, add_plugin_argument, add_set_argument


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="experiment YAML file")
    add_set_argument(p)
    add_mode_argument(p)
    add_plugin_argument(p)


def main(cli_args: argparse.Namespace) -> int:
    for line in validate_config(ValidateConfigArgs.from_cli_args(cli_args)):
        print(line)
    return 0
