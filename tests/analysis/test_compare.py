"""kvsim compare: bootstrap interval math on synthetic data, and the comparison of a run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sim.analysis.bootstrap import ratio_interval, stat_interval
from sim.analysis.compare import compare
from sim.cli import main
from sim.rundir.outputs import read_csv, write_csv, write_json
from sim.rundir.reader import load_results

# --- a synthetic run directory --------------------------------------------------------

#: True medians of latency and means of GIL hold, by variant.
LAT = {"scalar": 20.0, "numpy": 10.0}
HOLD = {"scalar": 12.0, "numpy": 3.0}


def write_run(
    path: Path,
    *,
    repeats: int = 1,
    steps: bool = False,
    stall: bool = False,
    n: int = 200,
    variants: tuple[str, ...] = ("scalar", "numpy"),
) -> Path:
    """A run directory as kvsim writes it, with known distributions (seeded)."""
    rng = np.random.default_rng(42)
    axes = ["variant", "workers"]
    summary, per_rep, requests, step_rows = [], [], [], []
    for variant in variants:
        for workers in (1, 4):
            base = {"variant": variant, "workers": workers}
            for rep in range(repeats):
                lat = LAT[variant] * rng.lognormal(0.0, 0.3, n) * (1 + 0.1 * (workers == 4))
                hold = rng.normal(HOLD[variant], 0.5, n)
                requests += [
                    {**base, "repeat": rep, "request_id": i, "latency_ms": lat[i],
                     "gil_hold_ms": hold[i], "status": "ok"}
                    for i in range(n)
                ]  # fmt: skip
                per_rep.append({**base, "repeat": rep, "throughput_rps": 50.0 + rep,
                                "status": "ok"})  # fmt: skip
                if steps:
                    scale = 1.0 + (HOLD[variant] / 4.0) * (workers / 4)
                    for phase, k in (("alone", 1.0), ("load", scale)):
                        step_rows += [
                            {**base, "repeat": rep, "phase": phase, "step_ms": v,
                             "stall_ms": v - 2.0, "build_us": 30.0}
                            for v in 2.0 + k * rng.exponential(0.5, 50)
                        ]  # fmt: skip
            row = {**base, "repeats": repeats, "throughput_rps": 50.0, "status": "ok"}
            if stall:
                row["stall_p99_ms"] = 8.0 if variant == "scalar" else 2.0
            summary.append(row)
    write_json(
        path / "manifest.json",
        {"tool": "kvsim", "axes": axes, "repeats": repeats, "config": {"name": "synth"}},
    )
    write_csv(path / "summary.csv", list(summary[0]), summary)
    write_csv(path / "summary_repeats.csv", list(per_rep[0]), per_rep)
    write_csv(path / "requests.csv", list(requests[0]), requests)
    if steps:
        write_csv(path / "steps.csv", list(step_rows[0]), step_rows)
    return path


# --- the interval math ----------------------------------------------------------------


def test_intervals_are_deterministic_for_a_seed() -> None:
    data = [np.random.default_rng(1).normal(10, 2, 300)]
    a = stat_interval(data, "p99", n_boot=500, seed=7)
    b = stat_interval(data, "p99", n_boot=500, seed=7)
    c = stat_interval(data, "p99", n_boot=500, seed=8)
    assert a == b
    assert a.value == c.value and (a.low, a.high) != (c.low, c.high)
    assert a.low <= a.value <= a.high
    assert a.value == pytest.approx(np.percentile(data[0], 99))


def test_ratio_interval_brackets_the_true_ratio_and_excludes_one() -> None:
    rng = np.random.default_rng(3)
    fast, slow = [rng.normal(5.0, 1.0, 400)], [rng.normal(10.0, 2.0, 400)]
    r = ratio_interval(fast, slow, "mean", n_boot=1000, seed=0)
    assert r.low < 0.5 < r.high and r.high - r.low < 0.1
    assert r.excludes_one
    same = ratio_interval([rng.normal(10, 2, 400)], slow, "mean", n_boot=1000, seed=0)
    assert same.low < 1.0 < same.high and not same.excludes_one


def test_ratio_interval_covers_the_truth_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(11)
    hits = 0
    trials = 120
    for t in range(trials):
        a = [rng.exponential(3.0, 150)]
        b = [rng.exponential(6.0, 150)]
        r = ratio_interval(a, b, "mean", n_boot=400, seed=t)
        hits += r.low <= 0.5 <= r.high
    assert 0.85 <= hits / trials <= 1.0


def test_repeats_that_disagree_widen_the_interval() -> None:
    rng = np.random.default_rng(5)
    runs = [rng.normal(8.0, 1.0, 200), rng.normal(12.0, 1.0, 200)]
    two_level = stat_interval(runs, "mean", n_boot=1000, seed=0)
    pooled = stat_interval([np.concatenate(runs)], "mean", n_boot=1000, seed=0)
    assert two_level.value == pytest.approx(pooled.value)
    assert (two_level.high - two_level.low) > 3 * (pooled.high - pooled.low)


def test_empty_or_nan_data_gives_nan_not_an_error() -> None:
    r = ratio_interval([np.array([np.nan, np.nan])], [np.array([1.0, 2.0])], "p50", n_boot=100)
    assert np.isnan(r.value) and np.isnan(r.low)


# --- comparing a run ------------------------------------------------------------------


def test_compare_values_ratios_and_levels(tmp_path) -> None:
    # Three repeats: a ratio's interval comes from the spread between them.
    res = load_results(write_run(tmp_path, repeats=3))
    comp = compare(res, n_boot=500, seed=0)
    assert comp.baseline == "scalar" and comp.level_axes == ["workers"]
    assert comp.levels == [("1",), ("4",)]
    assert [m.name for m in comp.metrics] == [
        "latency_p50_ms",
        "latency_p99_ms",
        "gil_hold_mean_ms",
        "throughput_rps",
    ]  # no stall, no engine columns in this run: left out, not shown empty
    rows = read_csv(tmp_path / "requests.csv")
    lat = [float(r["latency_ms"]) for r in rows if r["variant"] == "numpy" and r["workers"] == "4"]
    cell = comp.cells[(("4",), "numpy", "latency_p99_ms")]
    assert cell.value == pytest.approx(np.percentile(lat, 99), rel=1e-5) and cell.n == 600
    p50 = comp.cells[(("1",), "numpy", "latency_p50_ms")].ratio
    assert p50.low < p50.value < p50.high and 0.4 < p50.value < 0.6 and p50.excludes_one
    hold = comp.cells[(("1",), "numpy", "gil_hold_mean_ms")].ratio
    assert hold.value == pytest.approx(0.25, abs=0.02)
    assert comp.cells[(("1",), "scalar", "latency_p50_ms")].ratio is None
    again = compare(res, n_boot=500, seed=0)
    assert again.cells == comp.cells


def test_compare_picks_up_engine_steps_and_stall_when_present(tmp_path) -> None:
    res = load_results(write_run(tmp_path, steps=True, stall=True, repeats=2, n=60))
    comp = compare(res, baseline="numpy", n_boot=300)
    names = [m.name for m in comp.metrics]
    assert {"engine_step_p99_ms", "engine_stall_p99_ms", "stall_p99_ms"} <= set(names)
    step = comp.cells[(("4",), "scalar", "engine_step_p99_ms")]
    assert step.ratio.value > 1.5 and step.n == 100  # 2 repeats × 50 load-phase steps
    stall = comp.cells[(("4",), "scalar", "stall_p99_ms")].ratio
    assert stall.value == pytest.approx(4.0)
    thr = comp.cells[(("1",), "scalar", "throughput_rps")]
    assert thr.n == 2 and thr.value == pytest.approx(50.5)  # mean over the two repeats


def test_compare_command_writes_markdown_and_csv(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run", repeats=3)
    args = ["--bootstrap", "300", "--metric", "latency_p99_ms", "--metric", "gil_hold_mean_ms"]
    assert main(["compare", str(run), *args]) == 0
    out = capsys.readouterr().out
    md = (run / "compare.md").read_text()
    assert md in out
    assert "## workers=1" in md and "| scalar (baseline) |" in md and "p99 latency (ms)" in md
    assert "×" in md and "[" in md
    rows = read_csv(run / "compare.csv")
    assert len(rows) == 2 * 2 * 2  # levels × variants × metrics
    numpy_hold = next(
        r for r in rows
        if r["variant"] == "numpy" and r["metric"] == "gil_hold_mean_ms" and r["workers"] == "1"
    )  # fmt: skip
    assert float(numpy_hold["ratio_ci_low"]) < float(numpy_hold["ratio"])
    assert float(numpy_hold["ratio"]) < float(numpy_hold["ratio_ci_high"])


def test_compare_errors_are_one_line(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run")
    assert main(["compare", str(run), "--metric", "engine_step_p99_ms"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "engine_step_p99_ms" in err and "available:" in err
    assert main(["compare", str(run), "--baseline", "numba"]) == 2
    assert "not among the values of variant" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "nope")]) == 2
    assert "no such run directory" in capsys.readouterr().err
    (tmp_path / "exp.yaml").write_text("name: x\n")  # the config instead of its run
    assert main(["compare", str(tmp_path / "exp.yaml")]) == 2
    assert "exp.yaml: a file, not a run directory; give the directory" in capsys.readouterr().err
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "manifest.json").write_text(json.dumps({"tool": "other"}))
    assert main(["compare", str(tmp_path / "foreign")]) == 2


def test_a_negative_seed_is_named(tmp_path, capsys) -> None:
    # numpy's 'expected non-negative integer' was the whole error line: no option named.
    run = write_run(tmp_path / "run", repeats=2, n=30)
    for argv in (["compare", str(run)], ["report", str(run)]):
        assert main([*argv, "--seed", "-1"]) == 2
        err = capsys.readouterr().err.strip()
        assert err == "kvsim: error: --seed -1: allowed a whole number, 0 or more", err


def test_compare_by_another_axis(tmp_path) -> None:
    res = load_results(write_run(tmp_path, n=150, repeats=3))
    comp = compare(res, baseline="1", metrics=["latency_p50_ms"], n_boot=300, by="workers")
    assert comp.level_axes == ["variant"] and comp.levels == [("scalar",), ("numpy",)]
    ratio = comp.cells[(("numpy",), "4", "latency_p50_ms")].ratio
    assert ratio.low < 1.1 < ratio.high  # workers=4 rows were drawn 10% slower
    with pytest.raises(ValueError, match="not an axis"):
        compare(res, by="clients")


def test_a_numeric_baseline_matches_however_it_is_written(tmp_path) -> None:
    # The tables write a swept 1.0 as 1: --baseline 1.0 (as the config spells it) is that value.
    res = load_results(write_run(tmp_path, n=50, repeats=2))
    comp = compare(res, baseline="1.0", metrics=["latency_p50_ms"], n_boot=100, by="workers")
    assert comp.baseline == "1"
    assert comp.cells[(("numpy",), "4", "latency_p50_ms")].ratio is not None
    with pytest.raises(ValueError, match="not among the values of workers"):
        compare(res, baseline="1.5", n_boot=100, by="workers")
