"""``sim.check``: does a variant compute what the reference computes (``kvsim check``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sim.api.cli_args import namespace_fields
from sim.errors import UsageError

if TYPE_CHECKING:
    import argparse

    from sim.conformance.check import CheckResult

__all__ = ["CheckArgs", "check"]


@dataclass(frozen=True)
class CheckArgs:
    """What ``kvsim check`` was asked: ``check(name, plugins=, options=, threads=)``, then
    with ``audit`` sim.api.check_audit.audit_variant for an address variant."""

    name: str
    plugins: tuple[str, ...]
    #: The ``--option KEY=VALUE`` pairs, each value read as YAML.
    options: Mapping[str, Any]
    threads: int
    audit: bool

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> CheckArgs:
        options = MappingProxyType(_options(args.option))
        return cls(**namespace_fields(cls, args, plugins=tuple(args.plugin), options=options))


def _options(pairs: Sequence[str]) -> dict[str, Any]:
    from sim.config.yaml_reader import read_yaml_value  # the YAML reader: only for options

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--option {pair!r}: expected KEY=VALUE")
        out[key] = read_yaml_value(value, f"--option {key}") if value.strip() else None
    return out


def check(
    name: str,
    *,
    plugins: Sequence[str | Path] = (),
    options: Mapping[str, Any] | None = None,
    threads: int = 4,
) -> CheckResult:
    """Run variant ``name`` through the corpus of docs/your-connector.md against ``scalar``
    (an index variant: against the reference index), then again from ``threads`` threads.

    ``plugins`` are files registering variants (relative to the working directory),
    loaded for this call only. Returns a ``CheckResult`` (``.ok``, ``.failure``: the
    first mismatch in one line, ``.summary()``). ConfigError for a broken plug-in file,
    UsageError for an unknown name or options the variant does not take.
    """
    import difflib  # stdlib, on this path only: not at import sim

    from connectors import registry  # the variants' registry: not at import sim
    from sim.config.plugins import command_plugins  # pydantic: not at import sim
    from sim.conformance import check_index_variant, check_variant  # numpy: not at import sim

    if not 1 <= threads <= 64:
        raise UsageError(f"threads {threads}: between 1 and 64")
    with command_plugins(plugins):
        address, index = registry.address_variant_names(), registry.index_variant_names()
        if name in index and name not in address:
            return check_index_variant(name)
        if name not in address and name.endswith(".py"):
            raise UsageError(_a_file_named(name))
        if name not in address:
            close = difflib.get_close_matches(name, [*address, *index], n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UsageError(
                f"no variant {name!r}; {hint}known: {', '.join([*address, *index])} "
                "(a variant of your own: --plugin FILE)"
            )
        if not registry.get_address_variant(name).computes_addresses:
            raise UsageError(f"{name}: computes no addresses (a synthetic load): no check")
        try:
            return check_variant(name, dict(options or {}), threads)
        except ValueError as exc:
            raise UsageError(f"options: {exc}") from None


def _a_file_named(path: str) -> str:
    """Where a file was given for the variant's name (``kvsim check mine.py``): the command
    to type, with the names the file registers (it is loaded to find them, inside the
    ``--plugin`` files' scope the caller holds: those are not loaded again)."""
    from connectors import registry  # the variants' registry: not at import sim
    from sim.config.plugins import command_plugins  # pydantic: not at import sim

    if not Path(path).is_file():
        return (
            f"no variant {path!r} and no such file; "
            "a file of your own: kvsim check NAME --plugin FILE"
        )
    before = {*registry.address_variant_names(), *registry.index_variant_names()}
    with command_plugins([path]):
        after = [*registry.address_variant_names(), *registry.index_variant_names()]
    # A file that registers none is refused as it loads (sim.config.plugins), in one line.
    names = [n for n in after if n not in before]
    example = f"kvsim check {names[0] if names else 'NAME'} --plugin {path}"
    return f"{path} is a file; it registers {', '.join(map(repr, names))}: {example}"
