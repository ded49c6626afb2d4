"""Model mode stands for the interpreter its config names (issue 39, item 5).

A model point with ``interpreter:`` simulates that build with the GIL state it names
(off: no GIL, on: CPython's), and its calibration must have been measured in that
build: 3.13's free-threaded build runs pure Python ~2x slower than 3.11, so a hold
measured in one is no hold of the other. A calibration from another build or minor
version is refused in one line naming both and the command that makes the right one.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path
from typing import Any

import pytest

from sim.config import ConfigError, ExperimentConfig
from sim.model.calibration import CalibrationError, load_calibration
from sim.model.coverage import check_interpreter, check_point
from sim.model.replay import RealRep, measured
from sim.process.interpreter import free_threaded_build, this_interpreter
from tests.model.test_driver import write_calibration

OWN_BUILD = "free-threaded" if free_threaded_build() else "default"


def _cfg(**extra: Any) -> ExperimentConfig:
    return ExperimentConfig.model_validate({"name": "t", "mode": "model", **extra})


def _cal(tmp_path: Path, interpreter: dict[str, Any] | None) -> Any:
    path = write_calibration(tmp_path / "cal.json")
    if interpreter is not None:
        data = json.loads(path.read_text())
        data["interpreter"] = interpreter
        path.write_text(json.dumps(data))
    return load_calibration(path)


def test_the_gil_model_mode_simulates_follows_interpreter_gil() -> None:
    here = sys.executable
    assert _cfg().simulated_gil == "cpython"
    assert _cfg(gil={"kind": "none"}).simulated_gil == "none"
    assert _cfg(interpreter={"python": here, "gil": "off"}).simulated_gil == "none"
    assert _cfg(interpreter={"python": here, "gil": "on"}).simulated_gil == "cpython"
    # real mode is untouched: the child's interpreter decides there
    real = ExperimentConfig.model_validate({"name": "t", "interpreter": {"gil": "on"}})
    assert real.mode == "real" and real.gil.kind == "cpython"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"interpreter": {"python": "python3"}}, "interpreter.gil: default in model mode"),
        (
            {"interpreter": {"python": "python3", "gil": "on"}, "gil": {"kind": "none"}},
            "gil.kind: none disagrees with interpreter.gil: on",
        ),
    ],
)
def test_a_model_point_that_does_not_say_its_gil_is_refused(
    extra: dict[str, Any], needle: str
) -> None:
    with pytest.raises((ConfigError, ValueError)) as info:
        _cfg(**extra)
    assert needle in str(info.value)


def test_a_calibration_from_the_interpreter_the_point_stands_for_is_taken(
    tmp_path: Path,
) -> None:
    cal = _cal(tmp_path, this_interpreter())
    check_interpreter(_cfg(), cal)
    check_interpreter(_cfg(interpreter={"python": sys.executable, "gil": "on"}), cal)
    assert cal.interpreter is not None and cal.manifest_entry()["interpreter"] == cal.interpreter


def test_a_calibration_from_another_build_is_refused_naming_both(tmp_path: Path) -> None:
    other_build = "default" if OWN_BUILD == "free-threaded" else "free-threaded"
    cal = _cal(tmp_path, {"version": platform.python_version(), "build": other_build})
    cfg = _cfg(interpreter={"python": sys.executable, "gil": "on"})
    with pytest.raises(CalibrationError) as info:
        check_point(cfg, cal)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{cal.path}: measured in Python ")
    assert (
        f"({other_build} build)" in msg
        and f"(Python {platform.python_version()}, {OWN_BUILD} build)" in msg
    )
    assert f"kvsim calibrate gil --python {sys.executable} --out FILE" in msg


def test_a_calibration_from_another_minor_version_is_refused(tmp_path: Path) -> None:
    major, minor = sys.version_info[:2]
    cal = _cal(tmp_path, {"version": f"{major}.{minor + 1}.0", "build": OWN_BUILD})
    with pytest.raises(CalibrationError, match=r"recalibrate in it: `kvsim calibrate gil --force`"):
        check_interpreter(_cfg(), cal)
    # the micro version is not a reason: 3.11.7 and 3.11.9 run the same interpreter
    check_interpreter(
        _cfg(), _cal(tmp_path, {"version": f"{major}.{minor}.99", "build": OWN_BUILD})
    )


def test_an_old_calibration_serves_kvsims_own_python_only(tmp_path: Path) -> None:
    cal = _cal(tmp_path, None)
    assert cal.interpreter is None
    check_interpreter(_cfg(), cal)
    with pytest.raises(CalibrationError, match="records no interpreter"):
        check_interpreter(_cfg(interpreter={"python": sys.executable, "gil": "on"}), cal)


@pytest.mark.skipif(free_threaded_build(), reason="this python is free-threaded: gil off runs")
def test_gil_off_for_a_build_with_a_gil_is_refused(tmp_path: Path) -> None:
    cal = _cal(tmp_path, this_interpreter())
    needle = r"interpreter\.gil: off needs a free-threaded python"
    with pytest.raises(CalibrationError, match=needle):
        check_interpreter(_cfg(interpreter={"python": sys.executable, "gil": "off"}), cal)


def test_the_replay_of_a_gil_off_run_takes_each_requests_thread_cpu() -> None:
    rows = [
        {"request_id": "0", "gil_hold_ms": "", "thread_cpu_ms": "12.5"},
        {"request_id": "1", "gil_hold_ms": "3.0", "thread_cpu_ms": "4.0"},
        {"request_id": "2", "gil_hold_ms": "", "thread_cpu_ms": ""},
    ]
    got = measured(RealRep(repeat=0, requests=rows))
    assert got.holds_s == {0: pytest.approx(0.0125), 1: pytest.approx(0.003)}
