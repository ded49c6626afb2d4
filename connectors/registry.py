"""Registry of connector variants: each variant is one module that registers itself.

Built-in variants are the ``connectors.address_*`` and ``connectors.index_*``
modules; other installed packages add theirs through the entry-point group
``kvsim.connectors`` (an entry point names a module or object whose import
registers it). Variant modules keep numba and torch imports inside functions so
that listing variants stays fast.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
from typing import Any, TypeVar

__all__ = [
    "ENTRY_POINT_GROUP",
    "address_variant_names",
    "get_address_variant",
    "get_index_variant",
    "index_variant_names",
    "register",
    "register_index",
]

ENTRY_POINT_GROUP = "kvsim.connectors"

_ADDRESS: dict[str, type] = {}
_INDEX: dict[str, type] = {}
_loaded = False

T = TypeVar("T", bound=type)


def register(cls: T) -> T:
    """Class decorator: make an AddressVariant subclass selectable by its ``name``."""
    _add(_ADDRESS, cls)
    return cls


def register_index(cls: T) -> T:
    """Class decorator: make a token-to-request index variant selectable by its ``name``."""
    _add(_INDEX, cls)
    return cls


def _add(table: dict[str, type], cls: type) -> None:
    name = getattr(cls, "name", "")
    if not name:
        raise ValueError(f"{cls.__qualname__} has no name")
    other = table.get(name)
    if other is not None and other is not cls and other.__qualname__ != cls.__qualname__:
        raise ValueError(f"variant name {name!r} is taken by {other.__module__}")
    table[name] = cls


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import connectors

    for mod in pkgutil.iter_modules(connectors.__path__):
        if mod.name.startswith(("address_", "index_")):
            importlib.import_module(f"connectors.{mod.name}")
    # Looked up at call time (not imported by name) so tests can substitute entry points.
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:
            _loaded = False  # the next lookup reports it again instead of a partial registry
            raise ImportError(
                f"connector plugin {ep.name!r} ({ep.value}, entry-point group "
                f"{ENTRY_POINT_GROUP}) failed to load: {type(exc).__name__}: {exc}"
            ) from exc


def address_variant_names() -> list[str]:
    _load_all()
    return list(_ADDRESS)


def index_variant_names() -> list[str]:
    _load_all()
    return list(_INDEX)


def get_address_variant(name: str) -> Any:
    _load_all()
    try:
        return _ADDRESS[name]
    except KeyError:
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(_ADDRESS)}") from None


def get_index_variant(name: str) -> Any:
    _load_all()
    try:
        return _INDEX[name]
    except KeyError:
        raise KeyError(f"unknown index variant {name!r}; known: {', '.join(_INDEX)}") from None
