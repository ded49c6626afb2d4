"""``kvsim calibrate gil --python PY``: the calibration measured in another interpreter.

Model points that stand for a free-threaded build need a calibration measured in it
(sim.model.coverage); the command runs the same calibration there, in one subprocess,
and the file records the interpreter it ran in. A tiny grid keeps it to seconds.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from sim.api.calibrate import _missing, calibrate
from sim.cli import main
from sim.config import ConfigError
from sim.process.interpreter import FT_PYTHON_ENV, probe, resolve_python, setup_python

TINY_GRID = ["--variants", "noop", "--chunks", "1", "--regions", "4", "--groups", "1"]


def test_the_command_measures_in_the_named_python_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cal.json"
    args = ["calibrate", "gil", "--python", sys.executable, "--out", str(out), *TINY_GRID]
    assert main([*args, "--reps", "1", "--no-engine"]) == 0
    doc = json.loads(out.read_text())
    assert os.path.samefile(doc["interpreter"]["path"], sys.executable)
    assert doc["interpreter"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert list(doc["variants"]) == ["noop/per_group", "noop/per_chunk"]
    printed = capsys.readouterr()
    assert f"wrote {out}" in printed.out and "calibrate: variant noop/per_group" in printed.err


def test_a_failure_there_is_one_line_here(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        calibrate(tmp_path / "c.json", python=sys.executable, variants=["no_such_variant"])
    msg = str(info.value)
    assert "\n" not in msg and "unknown variant 'no_such_variant'" in msg, msg
    assert not (tmp_path / "c.json").exists()


def test_an_interpreter_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--python: interpreter.python: .*no such executable"):
        calibrate(tmp_path / "c.json", python=str(tmp_path / "python9"))


def test_a_variant_whose_package_is_missing_is_skipped_unless_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from connectors import registry

    cls = registry.get_address_variant("numpy")
    monkeypatch.setattr(cls, "requires", ("numpy", "kvsim_no_such_package"))
    assert _missing(cls) == ["kvsim_no_such_package"]
    with pytest.raises(ConfigError, match="numpy needs package kvsim_no_such_package"):
        calibrate(tmp_path / "c.json", variants=["numpy"])


def test_the_default_out_names_the_python() -> None:
    from sim.commands.calibrate import default_out

    assert default_out("") == "results/calibration.json"
    assert default_out("freethreaded") == "results/calibration-freethreaded.json"
    assert default_out("/opt/py/bin/python3.13t") == "results/calibration-python3.13t.json"


def test_under_the_free_threaded_python_the_gil_is_on_and_the_build_recorded(
    tmp_path: Path,
) -> None:
    if setup_python() is None:
        pytest.skip(
            "no free-threaded CPython here: `make freethreaded` builds one (or set "
            f"{FT_PYTHON_ENV}=/path/to/python3.13t)"
        )
    path = resolve_python("freethreaded")
    out = tmp_path / "ft.json"
    doc = calibrate(
        out,
        python="freethreaded",
        variants=["noop"],
        chunks=[1],
        regions=[4],
        groups=[1],
        reps=1,
        engine=False,
    )
    assert doc["interpreter"]["build"] == "free-threaded"
    assert doc["interpreter"]["gil_enabled"] is True  # PYTHON_GIL=1: holds through the meter
    assert doc["interpreter"]["version"] == probe(path).version
    # the load threads' slowdown beside each other, measured there with the GIL off
    assert doc["parallel_slowdown"]["interpreter"]["gil_enabled"] is False
    threads = doc["parallel_slowdown"]["threads"]
    for key in ("noop/per_group", "noop/per_chunk"):
        found = doc["variants"][key]["parallel_slowdown"]
        assert sorted(found, key=int) == [str(k) for k in range(2, threads + 1)]
        for m in found.values():
            assert m["slowdown"] >= 1.0 and 0.0 <= m["overlap"] <= 1.0 and m["ratio"] > 0
    assert json.loads(out.read_text()) == doc


def test_plugins_with_another_python_are_refused_not_dropped(tmp_path: Path) -> None:
    """The child calibrates built-in variants only: a plug-in file given with ``python`` was
    left out silently from the API (only the command refused it)."""
    with pytest.raises(ConfigError, match="--plugin with --python"):
        calibrate(tmp_path / "c.json", python=sys.executable, plugins=["plug.py"])
    assert not (tmp_path / "c.json").exists()


def test_the_command_prints_each_variants_slowdown_beside_other_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a free-threaded calibration measured with the GIL off is printed with the rest
    (the document is made up here: the measurement is the test above's)."""
    import sim.commands.calibrate as command

    doc = {
        "elapsed_s": 1.0,
        "machine": {"cores": 2, "loadavg": [0.1, 0.2, 0.3]},
        "harness": {"sim_cpu_per_request_ms": 0.1, "wake_ms": 0.02, "timer_late_ms": 0.06},
        "variants": {
            "synthetic": {"overhead_ms": 0.1},
            "scalar/per_group": {
                "hold": {"intercept": 0.1, "per_chunk_region": 1e-3, "per_chunk": 4e-3,
                         "per_group": 0.02},
                "fit_worst_rel_error": 0.4,
                "parallel_slowdown": {"2": {"slowdown": 1.87}, "3": {"slowdown": 1.81}},
            },
        },
    }  # fmt: skip
    monkeypatch.setattr(command, "calibrate", lambda out, **kw: doc)
    assert main(["calibrate", "gil", "--python", "freethreaded", "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "GIL off, CPU a request beside other load threads: × 2 1.87, × 3 1.81" in out
    assert out.count("beside other load threads") == 1  # synthetic: a set time, none
    assert "probe hold" not in out  # a document without it (one written before it was)
    doc["harness"].update(probe_hold_ms=0.03, probe_hold_busy_ms=0.075)
    assert main(["calibrate", "gil", "--python", "freethreaded", "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "probe hold 30 µs (75 µs after a wake-up that found the GIL busy)" in out
