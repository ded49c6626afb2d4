"""``kvsim variants [NAME]``: every registered variant, or one variant and its options."""

from __future__ import annotations

import argparse
import difflib

from connectors import registry
from sim.commands.plugin_args import add_plugin_argument, command_plugins
from sim.config.option_doc import option_rows
from sim.errors import UsageError

HELP = "list the registered connector variants, or show one variant and its options"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="a variant: print its description and every option (type, default, meaning)",
    )
    add_plugin_argument(p)


def _one(name: str) -> int:
    address, index = registry.address_variant_names(), registry.index_variant_names()
    if name in address:
        cls, where = registry.get_address_variant(name), "connector.variant"
    elif name in index:
        cls, where = registry.get_index_variant(name), "engine.index_variant"
    else:
        close = difflib.get_close_matches(name, [*address, *index], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageError(
            f"no variant {name!r}; {hint}address variants: {', '.join(address)}; "
            f"index variants: {', '.join(index)} (one of your own: --plugin FILE)"
        )
    print(f"{name} ({where}: {name})")
    print(f"  {cls.description}")
    rows = option_rows(getattr(cls, "Options", None))
    if not rows:
        print("  options: none")
        return 0
    print("  options (connector.options):")
    for opt, typ, default, meaning in rows:
        print(f"    {opt}  ({typ}, default {default})")
        print(f"        {meaning}")
    return 0


def main(args: argparse.Namespace) -> int:
    with command_plugins(args.plugin):
        return _list(args)


def _list(args: argparse.Namespace) -> int:
    if args.name:
        return _one(args.name)
    print("address variants (connector.variant):")
    for name in registry.address_variant_names():
        cls = registry.get_address_variant(name)
        opts = ""
        if cls.Options is not None:
            opts = f"  [options: {', '.join(cls.Options.model_fields)}]"
        print(f"  {name:<14} {cls.description}{opts}")
    index = registry.index_variant_names()
    if index:
        print("index variants (engine.index_variant):")
        for name in index:
            print(f"  {name:<14} {registry.get_index_variant(name).description}")
    print("`kvsim variants NAME` shows a variant's options")
    return 0
