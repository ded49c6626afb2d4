"""Registries of connector variants: each variant is one module that registers itself.

Two :class:`Registry` objects hold the variants by name: :data:`ADDRESS_VARIANTS`
(the load path's address computation) and :data:`INDEX_VARIANTS` (the engine's
token-to-request index). Built-in variants are the ``connectors.address_*`` and
``connectors.index_*`` modules; other installed packages add theirs through the
entry-point group ``kvsim.connectors`` (an entry point names a module or object
whose import registers it), and a config's ``plugins:`` files register theirs for
the length of a run (``connectors.plugin_file``). Both are found on the first lookup, not on import,
and variant modules keep numba and torch imports inside functions so that
listing variants stays fast.

Tests add a variant for the length of a ``with`` block and leave the registry as
they found it::

    with ADDRESS_VARIANTS.temporary(MyTestVariant):
        run_point(...)

The module-level functions (``register``, ``get_address_variant``, …) are the
default registries' methods under their historical names.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import connectors

__all__ = [
    "ADDRESS_VARIANTS",
    "ENTRY_POINT_GROUP",
    "INDEX_VARIANTS",
    "Registry",
    "address_variant_names",
    "discover_variants",
    "get_address_variant",
    "get_index_variant",
    "index_variant_names",
    "register",
    "register_index",
]

ENTRY_POINT_GROUP = "kvsim.connectors"

T = TypeVar("T", bound=type)


#: What a variant may be called (what a config's ``connector.variant`` names).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _check_options(cls: type, kind: str) -> None:
    """A variant's ``Options`` is None or a pydantic model (what ``validate_options``
    calls ``model_validate`` on); ValueError naming the class otherwise."""
    options = getattr(cls, "Options", None)
    if options is None:
        return
    from pydantic import BaseModel  # a variant with options has pydantic loaded already

    if not (isinstance(options, type) and issubclass(options, BaseModel)):
        shown = options.__name__ if isinstance(options, type) else repr(options)
        raise ValueError(
            f"{cls.__qualname__}.Options is {shown}; a {kind}'s Options is None or a "
            "pydantic model class (class Options(BaseModel): ...; docs/your-connector.md)"
        )


class Registry:
    """Classes of one kind by their ``name`` attribute, found lazily by ``discover``.

    ``discover`` runs before the first lookup (and again after a failed one, so a
    broken plugin is reported every time rather than leaving a silent partial
    list). It is expected to import the modules whose decorators register here.
    """

    def __init__(self, kind: str, discover: Callable[[], None] | None = None) -> None:
        #: What the entries are, for messages ("variant", "index variant").
        self.kind = kind
        self._discover = discover
        self._entries: dict[str, type] = {}
        self._discovered = discover is None

    # -- registering ---------------------------------------------------------
    def register(self, cls: T) -> T:
        """Class decorator: make ``cls`` selectable by its ``name``.

        Registering the same class again (a module reload: same module and
        qualified name) is allowed; another class under a taken name is a
        ValueError naming the module that has it.
        """
        name = getattr(cls, "name", "")
        if not isinstance(name, str):
            raise ValueError(
                f"{cls.__qualname__}.name is {name!r} ({type(name).__name__}); a {self.kind} "
                'name is a string, e.g. name = "mine"'
            )
        if not _NAME.fullmatch(name):
            raise ValueError(
                f"{cls.__qualname__}.name is {name!r}; a {self.kind} name is letters, digits, "
                "'_', '-' or '.', starting with a letter or digit, e.g. name = \"mine\""
                if name
                else f"{cls.__qualname__} has no name"  # connectors.plugin_file adds what to do
            )
        _check_options(cls, self.kind)
        other = self._entries.get(name)
        same = (getattr(other, "__module__", None), getattr(other, "__qualname__", None)) == (
            cls.__module__,
            cls.__qualname__,
        )
        if other is not None and other is not cls and not same:
            raise ValueError(f"{self.kind} name {name!r} is taken by {other.__module__}")
        self._entries[name] = cls
        return cls

    def unregister(self, name: str) -> type:
        """Remove ``name`` and return its class; KeyError when it is not registered."""
        try:
            return self._entries.pop(name)
        except KeyError:
            raise KeyError(f"no {self.kind} {name!r} is registered") from None

    # -- looking up ----------------------------------------------------------
    def names(self) -> list[str]:
        """Registered names, in registration order (built-ins first)."""
        self._ensure_discovered()
        return list(self._entries)

    def get(self, name: str) -> Any:
        """The class registered as ``name``; KeyError listing the known names otherwise."""
        self._ensure_discovered()
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self._entries)
            raise KeyError(
                f"unknown {self.kind} {name!r}; known: {known} (one of your own: --plugin FILE)"
            ) from None

    def entries(self) -> dict[str, type]:
        """A copy of the registered classes by name (discovery run first)."""
        self._ensure_discovered()
        return dict(self._entries)

    def __contains__(self, name: object) -> bool:
        self._ensure_discovered()
        return name in self._entries

    def rediscover(self) -> None:
        """Run discovery again at the next lookup (plugins installed since, tests)."""
        self._discovered = self._discover is None

    def _ensure_discovered(self) -> None:
        if self._discovered or self._discover is None:
            return
        self._discovered = True
        try:
            self._discover()
        except BaseException:
            self._discovered = False
            raise

    # -- scopes for tests ----------------------------------------------------
    @contextmanager
    def scoped(self) -> Iterator[Registry]:
        """Whatever is registered, unregistered or rediscovered inside is undone at the end.

        Discovery runs first, so a built-in module first imported inside the block
        (which registers only once per process) is not lost when the block ends.
        """
        self._ensure_discovered()
        saved = dict(self._entries), self._discovered
        try:
            yield self
        finally:
            self._entries = dict(saved[0])
            self._discovered = saved[1]

    @contextmanager
    def temporary(self, *classes: type) -> Iterator[Registry]:
        """``classes`` registered for the length of the block, then removed."""
        with self.scoped():
            for cls in classes:
                self.register(cls)
            yield self


def discover_variants() -> None:
    """Import the built-in variant modules and load the entry-point plugins."""
    for mod in pkgutil.iter_modules(connectors.__path__):
        if mod.name.startswith(("address_", "index_")):
            importlib.import_module(f"connectors.{mod.name}")
    # start-up: importlib.metadata (and the email package under it) costs a point child
    # ~15 ms at import, and only discovery needs it
    from importlib import metadata

    # Looked up at call time (not imported by name) so tests can substitute entry points.
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:
            raise ImportError(
                f"connector plugin {ep.name!r} ({ep.value}, entry-point group "
                f"{ENTRY_POINT_GROUP}) failed to load: {type(exc).__name__}: {exc}"
            ) from exc


#: Address-computation variants (``connector.variant``).
ADDRESS_VARIANTS = Registry("variant", discover_variants)
#: Token-to-request index variants (``engine.index_variant``).
INDEX_VARIANTS = Registry("index variant", discover_variants)

#: Class decorator: make an AddressVariant subclass selectable by its ``name``.
register = ADDRESS_VARIANTS.register
#: Class decorator: make a token-to-request index variant selectable by its ``name``.
register_index = INDEX_VARIANTS.register


def address_variant_names() -> list[str]:
    return ADDRESS_VARIANTS.names()


def index_variant_names() -> list[str]:
    return INDEX_VARIANTS.names()


def get_address_variant(name: str) -> Any:
    return ADDRESS_VARIANTS.get(name)


def get_index_variant(name: str) -> Any:
    return INDEX_VARIANTS.get(name)
