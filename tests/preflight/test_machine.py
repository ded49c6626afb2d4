"""A real Mooncake store where this machine cannot run one: refused once, at validation.

Where libibverbs1 is missing, every point of a ``store.kind: mooncake`` sweep failed on
its own with "mooncake_master exited with code 127" (issue 42 item 5). The library is
not uninstalled here: the import of ``mooncake.store`` is made to fail with the words
the dynamic loader uses for a missing library.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest

from sim.cli import main as cli_main
from sim.store.mooncake import mooncake_missing

_LOADER_SAYS = "libibverbs.so.1: cannot open shared object file: No such file or directory"


class _NoIbverbs(importlib.abc.MetaPathFinder):
    """``import mooncake.store`` fails as it does where libibverbs.so.1 is not installed."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == "mooncake.store":
            raise ImportError(_LOADER_SAYS)
        return None


@pytest.fixture
def no_ibverbs(monkeypatch: pytest.MonkeyPatch) -> None:
    if mooncake_missing() is not None:
        pytest.skip(f"the Mooncake store is unavailable here already: {mooncake_missing()}")
    monkeypatch.delitem(sys.modules, "mooncake.store", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_NoIbverbs(), *sys.meta_path])


def _mooncake_config(write_config, out: Path) -> Path:
    return write_config(
        {
            "store": {"kind": "mooncake"},
            "sweep": {"connector.variant": ["scalar", "numpy"]},
            "output": {"dir": str(out)},
        }
    )


def test_the_helper_names_the_missing_library(no_ibverbs: None) -> None:
    why = mooncake_missing()
    assert why is not None and "libibverbs.so.1" in why and "apt-get install libibverbs1" in why


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_mooncake_config_is_refused_once_naming_the_library(
    command: str, no_ibverbs: None, write_config, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "out"
    config = _mooncake_config(write_config, out)
    assert cli_main([command, str(config)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"kvsim: error: {config}: store.kind: mooncake (point 0, ")
    assert "libibverbs.so.1" in lines[0] and "apt-get install libibverbs1" in lines[0]
    assert not out.exists()  # refused before the run directory is touched


def test_a_model_store_config_does_not_ask_for_mooncake(
    no_ibverbs: None, write_config, capsys: pytest.CaptureFixture
) -> None:
    assert cli_main(["validate", str(write_config())]) == 0
    assert "libibverbs" not in capsys.readouterr().err
