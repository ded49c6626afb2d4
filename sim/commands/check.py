"""``kvsim check NAME``: a variant's results against the reference, before you measure it."""

from __future__ import annotations

import argparse

from sim.api.check import CheckArgs, check
from sim.api.check_audit import audit_variant
from sim.commands.common_args import add_plugin_argument


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


def main(cli_args: argparse.Namespace) -> int:
    args = CheckArgs.from_cli_args(cli_args)
    result = check(args.name, plugins=args.plugins, options=args.options, threads=args.threads)
    print(result.summary())
    if not result.ok:
        return 1
    if args.audit and result.reference == "scalar":  # an address variant
        agrees, line = audit_variant(args.name, args.options, args.plugins)
        print(line)
        return 0 if agrees else 1
    if args.audit:  # said, not skipped in silence: the user asked for it
        print(
            "audit: not run: it checks an address variant's gil_free declarations; "
            f"{args.name} is an index variant (kvsim bench index times it)"
        )
    return 0
