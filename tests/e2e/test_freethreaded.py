"""The same points on one free-threaded CPython with the GIL on and off (issue 39).

Needs a free-threaded interpreter: ``$KVSIM_FT_PYTHON``, or the one `make freethreaded`
set up in its cache (sim.process.interpreter.setup_python). Where none can be had the
tests skip and say so; .ci/run builds one first (scripts/freethreaded.sh).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from sim.cli import main
from sim.process.interpreter import FT_PYTHON_ENV, probe, resolve_python, setup_python
from tests.conftest import TINY

#: The suite's tiny point, scalar (pure Python: what the GIL serialises), under the set-up
#: free-threaded python.
FT = {
    **TINY,
    "name": "ft",
    "connector": {"variant": "scalar", "workers": 2},
    "interpreter": {"python": "freethreaded"},
}


@pytest.fixture(scope="module")
def ft_python() -> str:
    found = setup_python()
    if found is None:
        pytest.skip(
            "no free-threaded CPython here: `make freethreaded` builds one (or set "
            f"{FT_PYTHON_ENV}=/path/to/python3.13t)"
        )
    path = resolve_python("freethreaded")
    assert probe(path).free_threaded, f"{path} ({FT_PYTHON_ENV}) is not a free-threaded build"
    return path


def write(tmp_path: Path, **extra: object) -> Path:
    path = tmp_path / "ft.yaml"
    path.write_text(yaml.safe_dump({**FT, **extra}))
    return path


def test_the_set_up_interpreter_is_free_threaded_with_the_gil_off(ft_python: str) -> None:
    found = probe(ft_python)
    assert found.free_threaded and not found.gil_enabled and found.kvsim
    assert not found.missing(("pydantic", "yaml", "simpy", "numpy"))


def test_gil_on_and_off_on_one_binary_each_point_says_what_it_saw(
    ft_python: str, tmp_path: Path, capsys
) -> None:
    cfg = write(tmp_path, sweep={"interpreter.gil": ["on", "off"]})
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "the GIL's own cost · ft" in printed and "this machine:" in printed
    seen = {}
    for status in out.glob("points/*/rep-0/status.json"):
        rec = json.loads(status.read_text())["interpreter"]
        assert rec["build"] == "free-threaded" and rec["path"] == ft_python
        seen[rec["gil_requested"]] = (rec["gil_enabled_at_start"], rec["gil_enabled"])
    assert seen == {"on": (True, True), "off": (False, False)}
    with open(out / "summary.csv", newline="") as fh:
        summary = {r["gil"]: r for r in csv.DictReader(fh)}
    assert summary["on"]["gil_enabled"] == "1" and summary["on"]["gil_note"] == ""
    assert summary["off"]["gil_enabled"] == "0" and "GIL off" in summary["off"]["gil_note"]
    assert summary["off"]["gil_hold_mean_ms"] == "" and summary["off"]["gil_wait_p99_ms"] == ""
    assert float(summary["on"]["gil_hold_mean_ms"]) > 0
    for side in ("on", "off"):
        assert float(summary[side]["thread_cpu_mean_ms"]) > 0
    # read on both sides (a read that keeps the GIL): with it on, the GIL wait's core part
    for side in ("on", "off"):
        assert float(summary[side]["core_wait_mean_ms"]) >= 0
    assert float(summary["on"]["core_wait_mean_ms"]) <= float(summary["on"]["gil_wait_mean_ms"])
    with open(out / "requests.csv", newline="") as fh:
        off = [r for r in csv.DictReader(fh) if r["gil"] == "off"]
    assert off and all(r["gil_hold_ms"] == "" and float(r["thread_cpu_ms"]) > 0 for r in off)


def test_a_variant_whose_package_it_lacks_is_refused_at_validation(
    ft_python: str, tmp_path: Path, capsys
) -> None:
    if not probe(ft_python).missing(("numba",)):
        pytest.skip(f"{ft_python} has numba (a 3.14t can): nothing to refuse")
    cfg = write(tmp_path, connector={"variant": "numba", "workers": 1})
    assert main(["validate", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert "variant numba needs package numba" in err and len(err.splitlines()) == 1


def _ft_calibration(tmp_path: Path) -> Path:
    """A calibration measured in the free-threaded python, covering the tiny point."""
    cal = tmp_path / "ft-cal.json"
    grid = ["--variants", "scalar", "--chunks", "1,16", "--regions", "4", "--groups", "1,2"]
    args = ["calibrate", "gil", "--python", "freethreaded", "--out", str(cal), *grid]
    assert main([*args, "--reps", "2", "--no-engine"]) == 0
    return cal


def test_validate_model_judges_each_gil_state_against_its_real_runs(
    ft_python: str, tmp_path: Path, capsys
) -> None:
    cal = _ft_calibration(tmp_path)
    cfg = write(
        tmp_path,
        machine={"calibration": str(cal)},
        interpreter={"python": "freethreaded", "gil": "on"},
        sweep={"interpreter.gil": ["on", "off"]},
    )
    out = tmp_path / "validate"
    assert main(["validate-model", str(cfg), "--repeats", "1", "--out", str(out)]) == 0
    report = (out / "validation.md").read_text()
    assert "## Mechanism" in report and "## Prediction" in report
    rows = [line for line in report.splitlines() if line.startswith("scalar ")]
    assert {line.split()[2] for line in rows} >= {"on", "off"}, report
    # the model twins simulated the GIL each real side ran with
    statuses = list((out / "model").glob("points/*/rep-0/status.json"))
    assert len(statuses) == 2
    assert all(json.loads(s.read_text())["status"] == "ok" for s in statuses)
    with open(out / "model" / "summary.csv", newline="") as fh:
        model = {r["gil"]: r for r in csv.DictReader(fh)}
    assert (model["on"]["gil_enabled"], model["off"]["gil_enabled"]) == ("1", "0")
    assert model["off"]["gil_wait_mean_ms"] == "" and model["on"]["gil_wait_mean_ms"] != ""
    assert float(model["off"]["thread_cpu_mean_ms"]) > 0  # what takes the hold's place
    # the machine's speed was probed beside each real point, in the free-threaded python
    speeds = json.loads((out / "machine_speed.json").read_text())
    assert speeds and all(v > 0 for vs in speeds.values() for v in vs), speeds
    assert "speed probe" not in capsys.readouterr().err  # no probe failed or was skipped


def test_a_calibration_from_kvsims_own_python_is_refused_for_the_free_threaded_points(
    ft_python: str, tmp_path: Path, capsys
) -> None:
    from sim.process.interpreter import this_interpreter
    from tests.model.test_driver import write_calibration

    cal = write_calibration(tmp_path / "own.json", **{"scalar/per_group": _SCALAR_ROWS})
    data = json.loads(cal.read_text())
    cal.write_text(json.dumps({**data, "interpreter": this_interpreter()}))
    cfg = write(
        tmp_path,
        mode="model",
        machine={"calibration": str(cal)},
        interpreter={"python": "freethreaded", "gil": "off"},
    )
    assert main(["validate", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "(default build)" in err and "free-threaded build" in err
    assert "kvsim calibrate gil --python freethreaded" in err


#: A made-up scalar entry covering the tiny point (the refusal comes before any cost is read).
_SCALAR_ROWS = {
    "hold": {"intercept": 0.05, "per_chunk_region": 5e-4, "per_chunk": 1e-3, "per_group": 0.01},
    "free": {"intercept": 0.0, "per_chunk_region": 0.0, "per_chunk": 0.0, "per_group": 0.0},
    "range": {"chunks": [1, 64], "regions": [1, 8], "groups": [1, 2]},
}
