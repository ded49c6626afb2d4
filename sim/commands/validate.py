"""``kvsim validate CONFIG``: check a config without running it."""

from __future__ import annotations

import argparse

HELP = "check a config file and list its points without running anything"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="experiment YAML file")


def main(args: argparse.Namespace) -> int:
    from sim.config import parse_config

    cfg, points = parse_config(args.config)
    print(
        f"{args.config}: ok — experiment '{cfg.name}', {len(points)} point(s) × "
        f"{cfg.repeats} repeat(s), {cfg.workload.requests} requests each, "
        f"output {cfg.output_dir}"
    )
    for p in points:
        print(f"  {p.index:3d}  {p.label}")
    return 0
