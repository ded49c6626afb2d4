"""``kvsim bench model --sweep-points N`` times a sweep through ``kvsim run``'s path and
splits it into simulation and outputs (figures are not asserted: they depend on the
machine; the structure and the bookkeeping are)."""

from __future__ import annotations

import re
from pathlib import Path

from sim.benches.model import _stand_in_calibration
from sim.benches.model_sweep import SweepTiming, sweep_config, time_sweep
from sim.cli import main as cli_main
from sim.rundir.outputs import read_csv


def test_the_timed_sweep_runs_every_point_and_accounts_for_its_time(tmp_path: Path) -> None:
    cal = str(_stand_in_calibration(tmp_path / "cal.json"))
    t = time_sweep(cal, 6, 10, 15.0, tmp_path)  # 6 points -> 8 (2 holds x 4 workers)
    assert (t.points, t.requests_per_point, t.requests, t.workers) == (8, 10, 80, 1)
    rows = read_csv(tmp_path / "run" / "requests.csv")
    assert len(rows) == 80 and {r["mode"] for r in rows} == {"model"}
    assert 0 < t.simulation_s <= t.wall_s  # the points ran inside the sweep's wall time
    assert 0 <= t.start_s <= t.wall_s
    assert t.outputs_s == t.wall_s - t.simulation_s


def test_extrapolation_counts_the_start_once() -> None:
    t = SweepTiming(10, 500, 5000, wall_s=3.0, simulation_s=1.5, workers=2, start_s=1.0)
    assert t.extrapolate(1000, 500) == 1.0 + 2.0 * 100
    assert t.outputs_s == 3.0 - 1.5 / 2


def test_sweep_config_is_a_model_sweep_of_holds_by_workers() -> None:
    raw = sweep_config("cal.json", 10, 50, 15.0)
    assert raw["mode"] == "model" and raw["workload"]["requests"] == 50
    holds = raw["sweep"]["connector.options.hold_ms"]
    assert len(holds) * len(raw["sweep"]["connector.workers"]) == 12
    assert holds == sorted(holds) and holds[0] == 0.0 and holds[-1] < 40.0


def test_bench_model_prints_the_sweep_and_its_verdict(capsys) -> None:
    argv = ["bench", "model", "--requests", "10", "--repeat", "1", "--sweep-points", "8"]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert re.search(
        r"a 8-point sweep of 10 requests through kvsim run: [\d.]+ s \(simulation [\d.]+ s, "
        r"outputs [\d.]+ s",
        out,
    )
    assert re.search(
        r"1,000-point sweep of 500 requests through kvsim run: ~\d+ s .*: (met|NOT met)", out
    )
