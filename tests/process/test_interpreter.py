"""sim.process.interpreter: naming a python, asking it what it is, the GIL a point saw."""

from __future__ import annotations

import os
import sys

import pytest

from sim.process import interpreter as it


def test_empty_name_is_this_interpreter_and_a_missing_one_is_one_line(tmp_path) -> None:
    assert it.resolve_python("") == sys.executable
    with pytest.raises(it.InterpreterError, match=r"^interpreter.python: /no/such: no such"):
        it.resolve_python("/no/such")
    with pytest.raises(it.InterpreterError, match="no such executable"):
        it.resolve_python(str(tmp_path))  # a directory is not a python


def test_freethreaded_is_the_env_var_then_the_set_up_venv(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(it.FT_PYTHON_ENV, raising=False)
    monkeypatch.setenv(it.FT_CACHE_ENV, str(tmp_path))
    with pytest.raises(it.InterpreterError, match="run `make freethreaded`"):
        it.resolve_python("freethreaded")
    venv = tmp_path / "venv-abc"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    assert it.setup_python() is None  # no stamp yet: the set-up did not finish
    (venv / ".kvsim-deps").write_text("x")
    assert it.resolve_python("freethreaded") == str(venv / "bin" / "python")
    monkeypatch.setenv(it.FT_PYTHON_ENV, sys.executable)
    assert it.resolve_python("freethreaded") == sys.executable


def test_probe_of_this_interpreter_says_what_it_is() -> None:
    found = it.probe(sys.executable)
    assert found.version == ".".join(map(str, sys.version_info[:3]))
    assert found.free_threaded == it.free_threaded_build()
    assert found.kvsim  # child_env puts this kvsim on its path
    assert found.packages["pydantic"] and not found.missing(("numpy", "yaml"))
    assert found.missing(("no_such_package_kvsim",)) == ["no_such_package_kvsim"]


def test_probe_of_something_that_is_not_python_is_one_line(tmp_path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho not json\n")
    fake.chmod(0o755)
    with pytest.raises(it.InterpreterError, match="not a python kvsim can ask"):
        it.probe(str(fake))


def test_child_env_sets_the_gil_switch_and_puts_kvsim_first() -> None:
    base = {"PYTHONPATH": "/elsewhere", "PYTHON_GIL": "1"}
    off = it.child_env("off", base)
    assert off["PYTHON_GIL"] == "0"
    first, rest = off["PYTHONPATH"].split(os.pathsep)
    assert rest == "/elsewhere" and os.path.isdir(os.path.join(first, "sim"))
    assert it.child_env("on", {})["PYTHON_GIL"] == "1"
    assert it.child_env("default", base)["PYTHON_GIL"] == "1"  # left as the user set it


@pytest.mark.parametrize(
    ("requested", "start", "end", "fails"),
    [
        ("off", False, False, None),
        ("off", True, True, "gil: off, but"),
        ("off", False, True, "gil: off, but"),
        ("on", True, True, None),
        ("on", False, False, "gil: on, but"),
        ("default", True, True, None),
        ("default", False, False, None),
        ("default", False, True, "switched on during the point"),
    ],
)
def test_gil_mismatch(requested: str, start: bool, end: bool, fails: str | None) -> None:
    why = it.gil_mismatch(requested, start, end)
    if fails is None:
        assert why is None
    else:
        assert why is not None and fails in why and "\n" not in why


def test_observed_records_path_version_build_and_gil() -> None:
    rec = it.observed("on", True, True)
    assert rec["path"] == sys.executable
    assert rec["build"] in ("free-threaded", "default")
    assert rec["gil_requested"] == "on" and rec["gil_enabled"] is True
