"""``kvsim variants``: every registered variant with a one-line description."""

from __future__ import annotations

import argparse

HELP = "list the registered connector variants"


def add_arguments(p: argparse.ArgumentParser) -> None:
    return None


def main(args: argparse.Namespace) -> int:
    from connectors import registry

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
    return 0
