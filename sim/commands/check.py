"""``kvsim check NAME``: a variant's results against the reference, before you measure it."""

from __future__ import annotations

import argparse
from typing import Any

import sim
from sim.commands.check_audit import audit_variant
from sim.commands.plugin_args import add_plugin_argument, command_plugins
from sim.config.yaml_reader import read_yaml_value
from sim.errors import UsageError

HELP = "check a variant's addresses (or index) against the reference on a fixed corpus"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="an address or index variant (`kvsim variants`)")
    add_plugin_argument(p)
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a connector.options value for the variant (repeatable; YAML value)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=4,
        help="threads that run the corpus at once after the single-thread pass (default 4)",
    )
    p.add_argument(
        "--audit",
        action="store_true",
        help="also run a short point under a py-spy GIL audit: do the variant's declared "
        "GIL-free sections (gil_free) hold up?",
    )


def _options(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--option {pair!r}: expected KEY=VALUE")
        out[key] = read_yaml_value(value, f"--option {key}") if value.strip() else None
    return out


def main(args: argparse.Namespace) -> int:
    result = sim.check(
        args.name, plugins=args.plugin, options=_options(args.option), threads=args.threads
    )
    print(result.summary())
    if not result.ok:
        return 1
    if args.audit and result.reference == "scalar":  # an address variant
        with command_plugins(args.plugin) as plugins:
            return audit_variant(args.name, _options(args.option), plugins)
    if args.audit:  # said, not skipped in silence: the user asked for it
        print(
            "audit: not run: it checks an address variant's gil_free declarations; "
            f"{args.name} is an index variant (kvsim bench index times it)"
        )
    return 0
