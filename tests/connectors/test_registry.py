"""The variant registry: built-in discovery, entry-point plugins, name clashes."""

from __future__ import annotations

import importlib.metadata
import sys
import types
from typing import Any

import pytest

from connectors import registry
from connectors.base import AddressVariant


@pytest.fixture
def fresh_registry():
    """The registries as if nothing had been looked up yet; restored afterwards."""
    with registry.ADDRESS_VARIANTS.scoped(), registry.INDEX_VARIANTS.scoped():
        registry.ADDRESS_VARIANTS.rediscover()
        yield registry


class _FakeEntryPoint:
    def __init__(self, name: str, value: str, load: Any) -> None:
        self.name, self.value, self._load = name, value, load

    def load(self) -> Any:
        return self._load()


def _plugin_module(monkeypatch: pytest.MonkeyPatch, mod_name: str, variant_name: str):
    """A module that registers ``variant_name`` when imported, as a plugin package would."""

    def load() -> Any:
        mod = types.ModuleType(mod_name)

        class PluginVariant(AddressVariant):
            name = variant_name
            description = "from a plugin"

        PluginVariant.__qualname__ = f"{mod_name}.PluginVariant"
        registry.register(PluginVariant)
        mod.PluginVariant = PluginVariant
        monkeypatch.setitem(sys.modules, mod_name, mod)
        return mod

    return load


def test_builtin_variants_are_discovered(fresh_registry) -> None:
    names = fresh_registry.address_variant_names()
    for name in ("scalar", "numpy", "numba", "rows", "array"):
        assert name in names
        assert fresh_registry.get_address_variant(name).description


def test_entry_point_plugins_are_loaded(fresh_registry, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_entry_points(*, group: str):
        calls.append(group)
        load = _plugin_module(monkeypatch, "kvsim_test_plugin", "plugin-variant")
        return [_FakeEntryPoint("plugin", "kvsim_test_plugin", load)]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    assert "plugin-variant" in fresh_registry.address_variant_names()
    assert calls == [registry.ENTRY_POINT_GROUP]
    assert fresh_registry.get_address_variant("plugin-variant").description == "from a plugin"
    fresh_registry.address_variant_names()
    assert len(calls) == 1  # loaded once


def test_a_broken_plugin_is_named_in_the_error(
    fresh_registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom() -> Any:
        raise ModuleNotFoundError("No module named 'missing_dep'")

    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda *, group: [_FakeEntryPoint("broken", "broken_pkg:mod", boom)],
    )
    with pytest.raises(ImportError, match=r"plugin 'broken' \(broken_pkg:mod.*missing_dep"):
        fresh_registry.address_variant_names()
    with pytest.raises(ImportError, match="broken"):  # reported again, not a silent partial list
        fresh_registry.address_variant_names()


def test_duplicate_names_are_rejected(fresh_registry) -> None:
    class One(AddressVariant):
        name = "dup-test"

    class Two(AddressVariant):
        name = "dup-test"

    fresh_registry.register(One)
    fresh_registry.register(One)  # the same class again (a module reload) is fine
    with pytest.raises(ValueError, match="'dup-test' is taken"):
        fresh_registry.register(Two)
    with pytest.raises(ValueError, match="'scalar' is taken"):

        class Scalar(AddressVariant):
            name = "scalar"

        fresh_registry.address_variant_names()
        fresh_registry.register(Scalar)


def test_a_variant_needs_a_name(fresh_registry) -> None:
    class Nameless(AddressVariant):
        pass

    with pytest.raises(ValueError, match="has no name"):
        fresh_registry.register(Nameless)


def test_unknown_names_list_the_known_ones(fresh_registry) -> None:
    with pytest.raises(KeyError, match=r"unknown variant 'nope'; known: .*scalar"):
        fresh_registry.get_address_variant("nope")
    with pytest.raises(KeyError, match="unknown index variant 'nope'"):
        fresh_registry.get_index_variant("nope")


class _Temp(AddressVariant):
    name = "test-temporary"
    description = "test only"


def test_a_temporary_variant_is_gone_after_its_block() -> None:
    reg = registry.ADDRESS_VARIANTS
    before = reg.names()
    with reg.temporary(_Temp):
        assert reg.get("test-temporary") is _Temp and "test-temporary" in reg
        assert registry.get_address_variant("test-temporary") is _Temp  # the same registry
    assert reg.names() == before and "test-temporary" not in reg


def test_unregister_and_scoped_undo_each_other() -> None:
    reg = registry.ADDRESS_VARIANTS
    with reg.scoped():
        assert reg.unregister("scalar").name == "scalar"
        assert "scalar" not in reg
        with pytest.raises(KeyError, match="no variant 'scalar' is registered"):
            reg.unregister("scalar")
    assert reg.get("scalar").name == "scalar"


def test_a_registry_of_its_own_discovers_once() -> None:
    calls: list[int] = []
    reg = registry.Registry("widget", lambda: calls.append(1))
    assert reg.names() == [] and reg.names() == [] and calls == [1]

    @reg.register
    class W:
        name = "w"

    assert reg.get("w") is W
    with pytest.raises(KeyError, match="unknown widget 'x'; known: w"):
        reg.get("x")
    assert "w" not in registry.ADDRESS_VARIANTS  # no shared state between registries
