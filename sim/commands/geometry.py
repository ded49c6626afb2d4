"""``kvsim geometry [MODEL_OR_PATH]``: what a preset or a config.json resolves to
(sim.api.geometry)."""

from __future__ import annotations

import argparse

from sim.api.geometry import GeometryArgs, geometry


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model",
        nargs="?",
        metavar="MODEL_OR_PATH",
        help="preset name (omit to list them) or path to a config.json or its directory",
    )
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel size (default 1)")
    p.add_argument(
        "--block-size", type=int, default=128, help="tokens per store chunk (default 128)"
    )
    p.add_argument(
        "--kv-dtype", default="auto", help="KV element type (default: the model's dtype)"
    )


def main(cli_args: argparse.Namespace) -> int:
    print("\n".join(geometry(GeometryArgs.from_cli_args(cli_args))))
    return 0
