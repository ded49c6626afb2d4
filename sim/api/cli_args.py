"""What every command's typed argument object shares: its fields read from argparse by name.

Each ``kvsim`` command turns its Namespace into one frozen dataclass at the door
(``RunArgs.from_cli_args`` …, beside the API function it is the argument of), then
calls ``sim.api``; the same object, or keyword arguments it maps to one for one,
runs the same workflow from Python.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    import argparse

__all__ = ["FromCliArgs", "namespace_fields", "set_items"]


def namespace_fields(cls: type, ns: argparse.Namespace, **given: Any) -> dict[str, Any]:
    """The dataclass ``cls``'s fields: ``given`` ones as given, the rest read from ``ns``
    under the same name (a list as a tuple, so the object stays immutable)."""
    out = dict(given)
    for f in fields(cls):
        if f.name not in out:
            value = getattr(ns, f.name)
            out[f.name] = tuple(value) if isinstance(value, list) else value
    return out


class FromCliArgs:
    """A command's argument dataclass whose every field is read from the Namespace by name."""

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> Self:
        return cls(**namespace_fields(cls, args))


def set_items(args: argparse.Namespace) -> tuple[str, ...]:
    """The ``--set`` items of a command line, ``--mode`` and ``--audit`` included."""
    items = list(args.set)
    if getattr(args, "mode", None):
        items.append(f"mode={args.mode}")
    if getattr(args, "audit", False):
        items.append("gil.audit=pyspy")
    return tuple(items)
