"""``kvsim variants``'s workflow: the registered variants, or one variant and its options."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from connectors import registry
from sim.api.cli_args import namespace_fields
from sim.config.option_doc import option_rows
from sim.config.plugins import command_plugins
from sim.errors import UsageError

if TYPE_CHECKING:
    import argparse

__all__ = ["VariantsArgs", "variants"]


@dataclass(frozen=True)
class VariantsArgs:
    """What ``kvsim variants`` was asked: one variant's name (None: all) and ``--plugin`` files."""

    name: str | None
    plugins: tuple[str, ...]

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> VariantsArgs:
        return cls(**namespace_fields(cls, args, plugins=tuple(args.plugin)))


def variants(args: VariantsArgs) -> Iterator[str]:
    """The lines that list every registered variant (with the plug-in files' own), or
    describe ``args.name`` and its options; UsageError for an unknown name."""
    with command_plugins(args.plugins):
        yield from _one(args.name) if args.name else _list()


def _one(name: str) -> Iterator[str]:
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
    yield f"{name} ({where}: {name})"
    yield f"  {cls.description}"
    rows = option_rows(getattr(cls, "Options", None))
    if not rows:
        yield "  options: none"
        return
    yield "  options (connector.options):"
    for opt, typ, default, meaning in rows:
        yield f"    {opt}  ({typ}, default {default})"
        yield f"        {meaning}"


def _list() -> Iterator[str]:
    yield "address variants (connector.variant):"
    for name in registry.address_variant_names():
        cls = registry.get_address_variant(name)
        opts = ""
        if cls.Options is not None:
            opts = f"  [options: {', '.join(cls.Options.model_fields)}]"
        yield f"  {name:<14} {cls.description}{opts}"
    index = registry.index_variant_names()
    if index:
        yield "index variants (engine.index_variant):"
        for name in index:
            yield f"  {name:<14} {registry.get_index_variant(name).description}"
    yield "`kvsim variants NAME` shows a variant's options"
