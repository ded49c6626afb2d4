"""The model draws each request's hold from the measured spread around the mean."""

from __future__ import annotations

import statistics

import pytest

from sim.calibration.measure import SPREAD_REPS
from sim.cli import main as cli_main
from sim.config import parse_config
from sim.model.calibration import load_calibration
from sim.model.driver import run_model_point
from tests.model.test_driver import write_calibration

LINEAR = {"intercept": 0.05, "per_chunk_region": 5e-4, "per_chunk": 1e-3, "per_group": 0.01}
ZERO = dict.fromkeys(LINEAR, 0.0)
RANGE = {"chunks": [1, 64], "regions": [1, 8], "groups": [1, 2]}


def _holds(write_config, tmp_path, spread: list[float] | None) -> list[float]:
    entry = {"hold": LINEAR, "free": ZERO, "range": RANGE}
    if spread is not None:
        entry["hold_spread"] = spread
    cal = write_calibration(tmp_path / "cal.json", **{"numpy/per_group": entry})
    cfg = {"mode": "model", "machine": {"calibration": str(cal)}, "workload": {"requests": 200}}
    _, points = parse_config(write_config(cfg))
    return [r.gil_hold_ms for r in run_model_point(points[0]).records]


def test_without_a_spread_every_request_holds_the_mean(write_config, tmp_path) -> None:
    holds = _holds(write_config, tmp_path, None)
    assert len(set(holds)) == 1


def test_each_request_draws_its_hold_from_the_spread(write_config, tmp_path) -> None:
    flat = _holds(write_config, tmp_path, None)[0]
    holds = _holds(write_config, tmp_path, [0.5, 1.5])
    assert {round(h / flat, 9) for h in holds} == {0.5, 1.5}
    # draws from the run's generator: both halves show up in 200 requests, about evenly
    assert statistics.fmean(holds) == pytest.approx(flat, rel=0.15)


def test_calibrate_measures_a_spread_around_the_mean(tmp_path) -> None:
    out = tmp_path / "cal.json"
    args = ["calibrate", "--out", str(out), "--variants", "numpy", "--handlers", "per_group"]
    args += ["--chunks", "1,4", "--regions", "4", "--groups", "1", "--reps", "1", "--no-engine"]
    assert cli_main(args) == 0
    spread = load_calibration(out).data["variants"]["numpy/per_group"]["hold_spread"]
    assert len(spread) == SPREAD_REPS and spread == sorted(spread)
    assert statistics.fmean(spread) == pytest.approx(1.0, abs=1e-9)
    assert spread[0] > 0


def test_each_variant_is_measured_in_a_process_of_its_own(monkeypatch) -> None:
    # what a process ran before moves what a variant costs there (numpy after scalar in one
    # free-threaded process: 6.0 -> 9.9-12.6 ms), and a point's child runs one variant
    import sim.calibration.measure as measure

    entries = {}
    for variant in ("scalar", "numpy"):
        entry = measure.measure_variant_alone((variant, "per_group", [1], [4], [1], 1))
        assert [r["chunks"] for r in entry["points"]] == [1] and entry["points"][0]["hold"] > 0
        entries[variant] = entry
    calls = []

    def alone(args, plugins):  # type: ignore[no-untyped-def]
        calls.append((args[0], args[1], list(plugins)))
        return entries[args[0]]

    monkeypatch.setattr(measure, "measure_variant_alone", alone)
    monkeypatch.setattr(measure, "measure_harness", lambda: {})
    plug = [{"path": "p.py", "source": ""}]
    doc = measure.calibrate(
        ["scalar", "numpy"], ["per_group"], [1], [4], [1], 1, engine=False, plugins=plug
    )
    assert calls == [("scalar", "per_group", plug), ("numpy", "per_group", plug)]
    assert doc["variants"]["numpy/per_group"] is entries["numpy"]


def test_a_variant_that_fails_in_its_child_is_one_line_naming_it() -> None:
    from sim.calibration.measure import measure_variant_alone

    with pytest.raises(RuntimeError, match=r"^no_such_variant/per_group: .+") as err:
        measure_variant_alone(("no_such_variant", "per_group", [1], [4], [1], 1))
    assert "\n" not in str(err.value)


def test_a_plugin_variant_that_raises_ends_calibrate_in_one_line(tmp_path, capsys) -> None:
    plugin = tmp_path / "bad.py"
    plugin.write_text(
        "from connectors.address_scalar import ScalarVariant\n"
        "from connectors.registry import register\n\n"
        "@register\n"
        "class Bad(ScalarVariant):\n"
        "    name = 'bad_one'\n"
        "    description = 'raises'\n\n"
        "    def prepare_values(self, chunks, block_ids):\n"
        "        raise ValueError('broken on purpose')\n"
    )
    out = tmp_path / "cal.json"
    args = ["calibrate", "--plugin", str(plugin), "--variants", "bad_one", "--out", str(out)]
    args += ["--chunks", "1", "--regions", "4", "--groups", "1", "--reps", "1", "--no-engine"]
    assert cli_main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("kvsim: error: bad_one/per_group: ValueError: broken on purpose")
    assert not any("Traceback" in line for line in err)
    assert not out.exists()  # nothing half-written
