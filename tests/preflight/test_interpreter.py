"""Validation refuses, in one line and before any point runs, what an interpreter cannot
run: the GIL off where it has one, a variant whose package it lacks, the GIL meters where
the GIL is off. The interpreter is a fake probe here; tests/e2e/test_freethreaded.py
runs a real one."""

from __future__ import annotations

from typing import Any

import pytest

from sim.errors import ConfigError
from sim.preflight import interpreter as pre
from sim.preflight.checks import parse_checked_mapping
from sim.process.interpreter import PROBE_PACKAGES, Probe

ALL = dict.fromkeys(PROBE_PACKAGES, True)


def fake(monkeypatch: pytest.MonkeyPatch, *, free_threaded: bool, lacks: tuple[str, ...] = ()):
    """Every python resolves to /fake/python3.13t, which says it has all but ``lacks``."""
    asked: list[str] = []

    def probe(path: str) -> Probe:
        asked.append(path)
        packages = {**ALL, **dict.fromkeys(lacks, False)}
        return Probe(path, "3.13.15", free_threaded, not free_threaded, packages, True)

    monkeypatch.setattr(pre, "resolve_python", lambda name: "/fake/python3.13t")
    monkeypatch.setattr(pre, "probe", probe)
    return asked


def check(**sections: Any) -> None:
    data = {"name": "t", "workload": {"requests": 5}, "repeats": 1, **sections}
    parse_checked_mapping(data, label="t.yaml")


def test_gil_off_on_a_build_with_a_gil_is_refused_in_one_line(monkeypatch) -> None:
    fake(monkeypatch, free_threaded=False)
    with pytest.raises(ConfigError) as exc:
        check(interpreter={"python": "python3.11", "gil": "off"})
    msg = str(exc.value)
    assert "interpreter.gil" in msg and "off needs a free-threaded python" in msg
    assert "/fake/python3.13t (Python 3.13.15, default (GIL))" in msg and "\n" not in msg
    check(interpreter={"python": "python3.11", "gil": "on"})  # on is allowed there


def test_a_variant_whose_package_is_missing_is_named(monkeypatch) -> None:
    fake(monkeypatch, free_threaded=True, lacks=("numba", "torch"))
    with pytest.raises(ConfigError, match="variant numba needs package numba, which /fake/"):
        check(interpreter={"python": "x", "gil": "off"}, connector={"variant": "numba"})
    with pytest.raises(ConfigError, match=r"point variant=rows.*variant rows needs package numba"):
        check(interpreter={"python": "x"}, sweep={"connector.variant": ["numpy", "rows"]})
    with pytest.raises(ConfigError, match=r"engine.index_variant cached needs package torch"):
        check(interpreter={"python": "x"}, connector={"variant": "numpy"}, engine={"enabled": True})
    check(interpreter={"python": "x", "gil": "off"}, connector={"variant": "numpy"})


def test_kvsims_own_needs_are_checked_too(monkeypatch) -> None:
    fake(monkeypatch, free_threaded=True, lacks=("simpy",))
    with pytest.raises(ConfigError, match="kvsim needs package simpy"):
        check(interpreter={"python": "x"}, connector={"variant": "scalar"})


def test_the_gil_audit_is_refused_where_the_gil_is_off(monkeypatch) -> None:
    fake(monkeypatch, free_threaded=True)
    with pytest.raises(ConfigError, match=r"gil.audit.*holds the GIL.*gil: off"):
        check(interpreter={"python": "x", "gil": "off"}, gil={"audit": "pyspy"})
    with pytest.raises(ConfigError, match=r"gil.audit.*gil: default"):
        check(interpreter={"python": "x"}, gil={"audit": "pyspy"})
    check(interpreter={"python": "x", "gil": "on"}, gil={"audit": "pyspy"})
    check(interpreter={"python": "x", "gil": "off"}, gil={"probe": True})  # stalls still mean


def test_each_python_is_asked_once_and_a_default_config_never(monkeypatch) -> None:
    asked = fake(monkeypatch, free_threaded=True)
    check(sweep={"connector.workers": [1, 2, 4]})
    assert asked == []
    check(interpreter={"python": "x"}, sweep={"interpreter.gil": ["on", "off"]})
    assert asked == ["/fake/python3.13t"]


def test_an_interpreter_that_cannot_be_found_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"interpreter.python: /no/python: no such executable"):
        check(interpreter={"python": "/no/python"})
