"""validate-model's metrics and targets: the engine's step times join the metrics when the
engine runs; GIL wait, stall and step p99 have targets beside latency's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.analysis.bootstrap import Interval
from sim.config import parse_config
from sim.rundir.reader import load_results
from sim.sweep.experiment import run_experiment
from sim.validation.paired import TARGETS, Target, ValidationRow, summary_counts, validate_runs
from sim.validation.report import render
from tests.model.test_driver import write_calibration


def _row(**pairs: tuple[float, float]) -> ValidationRow:
    real = {k: Interval(r, math.nan, math.nan) for k, (r, _m) in pairs.items()}
    return ValidationRow({"workers": "1"}, real, {k: m for k, (_r, m) in pairs.items()})


def test_targets_are_relative_with_an_absolute_floor_for_gil_wait() -> None:
    assert {k: (t.rel, t.abs_ms) for k, t in TARGETS.items()} == {
        "latency_p50_ms": (0.10, 0.0),
        "latency_p99_ms": (0.15, 0.0),
        "gil_wait_mean_ms": (0.25, 0.1),
        "stall_p99_ms": (0.25, 0.0),
        "engine_step_p99_ms": (0.25, 0.0),
    }
    wait = TARGETS["gil_wait_mean_ms"]
    assert wait.met(0.01, 0.10) is True  # +900 %, but 0.09 ms: within the floor
    assert wait.met(0.01, 0.12) is False
    assert wait.met(2.0, 2.49) is True and wait.met(2.0, 2.51) is False  # 25 % > 0.1 ms
    assert wait.met(math.nan, 1.0) is None
    assert str(wait) == "±25% or 0.1 ms" and str(Target(0.1)) == "±10%"
    row = _row(gil_wait_mean_ms=(0.0, 0.05), stall_p99_ms=(4.0, 5.1))
    assert math.isnan(row.error("gil_wait_mean_ms"))  # no relative error from a zero
    assert row.within("gil_wait_mean_ms") is True
    assert row.within("stall_p99_ms") is False


def test_counts_are_over_the_points_that_have_the_metric() -> None:
    nan = math.nan
    rows = [
        _row(
            **{n: (1.0, 1.0) for n in TARGETS},
            gil_wait_p99_ms=(1.0, 1.0),
            engine_step_p50_ms=(nan, nan),
        ),
        _row(
            **{n: (1.0, 1.5) for n in TARGETS},
            gil_wait_p99_ms=(1.0, 1.0),
            engine_step_p50_ms=(nan, nan),
        ),
    ]
    rows[1].real["engine_step_p99_ms"] = Interval(nan, nan, nan)
    s = summary_counts(rows)
    assert s["points"] == 2
    assert s["latency_p50_ms_met"] == 1 and s["latency_p50_ms_points"] == 2
    assert s["engine_step_p99_ms_met"] == 1 and s["engine_step_p99_ms_points"] == 1


@pytest.fixture
def two_runs(write_config, tmp_path):
    """The same grid twice with other seeds (standing in for a real and a model run)."""
    cal = write_calibration(tmp_path / "cal.json")

    def run(engine: bool, seed: int):
        cfg = {
            "mode": "model",
            "seed": seed,
            "machine": {"calibration": str(cal)},
            "workload": {"requests": 40},
            "connector": {"variant": "synthetic", "options": {"hold_ms": 3.0}},
            "engine": {"enabled": engine, "baseline_steps": 5, "forward_ms": 1.0},
            "gil": {"probe": True},
            "sweep": {"connector.workers": [1, 2]},
        }
        path = write_config(cfg, name=f"e{engine}-{seed}.yaml")
        c, points = parse_config(path)
        out = tmp_path / f"run-{engine}-{seed}"
        run_experiment(c, points, path, out)
        return load_results(out)

    return run


def test_engine_step_times_join_the_metrics_when_the_engine_runs(two_runs) -> None:
    real, model = two_runs(True, 1), two_runs(True, 2)
    rows = validate_runs(real, model, n_boot=50)
    assert [r.key["workers"] for r in rows] == ["1", "2"]
    for row, (label, side) in zip(rows, (("1", real), ("2", real)), strict=True):
        steps = [
            float(s["step_ms"])
            for s in side.table("steps")
            if s["phase"] == "load" and s["workers"] == label
        ]
        assert steps
        assert row.real["engine_step_p99_ms"].value == pytest.approx(np.percentile(steps, 99))
        assert row.real["engine_step_p50_ms"].value == pytest.approx(np.percentile(steps, 50))
        iv = row.real["engine_step_p50_ms"]
        assert iv.low <= iv.value <= iv.high
        # a p99 over fewer than 500 steps gets no interval (TAIL_SAMPLES)
        iv = row.real["engine_step_p99_ms"]
        assert math.isnan(iv.low) == (len(steps) < 500)
        assert not math.isnan(row.model["engine_step_p99_ms"])
        assert row.within("engine_step_p99_ms") is not None
    text, csv_rows = render(rows, "t")
    assert "engine_step_p99 real [95% CI]" in text
    assert "- engine_step_p99_ms: " in text and "within ±25%" in text
    assert "- gil_wait_mean_ms: " in text and "within ±25% or 0.1 ms" in text
    assert "engine_step_p50_ms_model" in csv_rows[0]


def test_without_the_engine_its_metrics_are_left_out(two_runs) -> None:
    rows = validate_runs(two_runs(False, 1), two_runs(False, 2), n_boot=50)
    assert all(math.isnan(r.real["engine_step_p99_ms"].value) for r in rows)
    text, csv_rows = render(rows, "t")
    assert "engine_step" not in text and "engine_step_p99_ms_model" not in csv_rows[0]
    assert "- stall_p99_ms: " in text and "- latency_p50_ms: " in text


def test_the_summary_lines_count_the_mechanism_targets() -> None:
    from sim.validation.report import _mechanism

    rows = [_row(**{n: (1.0, 1.0) for n in TARGETS}), _row(**{n: (1.0, 2.0) for n in TARGETS})]
    for r in rows:
        r.real["gil_wait_p99_ms"] = r.real["engine_step_p50_ms"] = Interval(1.0, 1.0, 1.0)
        r.model["gil_wait_p99_ms"] = r.model["engine_step_p50_ms"] = 1.0
    line = _mechanism(summary_counts(rows))
    assert line == "; within target: gil wait mean 1/2, stall p99 1/2, engine step p99 1/2"
    for r in rows:  # without the engine its target is left out
        r.real["engine_step_p99_ms"] = Interval(math.nan, math.nan, math.nan)
    assert _mechanism(summary_counts(rows)) == "; within target: gil wait mean 1/2, stall p99 1/2"


def test_the_report_counts_model_values_inside_the_real_intervals() -> None:
    """A ±10 % target on a value whose own interval is ±30 % is decided by the run's noise
    as much as by the model: the report says how often the model lies inside the real
    value's interval and how wide those intervals are."""
    from sim.validation.paired import METRICS

    nan = math.nan

    def row(model_p50: float, low: float, high: float) -> ValidationRow:
        real = {name: Interval(nan, nan, nan) for name, *_ in METRICS}
        model = {name: nan for name, *_ in METRICS}
        real["latency_p50_ms"] = Interval(100.0, low, high)
        model["latency_p50_ms"] = model_p50
        return ValidationRow({"workers": "1"}, real, model)

    # +25 % but inside a ±30 % interval; +5 % inside ±10 %; -20 % outside ±10 %
    rows = [row(125.0, 70.0, 130.0), row(105.0, 90.0, 110.0), row(80.0, 90.0, 110.0)]
    s = summary_counts(rows)
    assert (s["latency_p50_ms_inside"], s["latency_p50_ms_inside_points"]) == (2, 3)
    assert s["latency_p50_ms_half_width"] == pytest.approx(0.10)  # median of .30, .10, .10
    assert s["latency_p50_ms_met"] == 1  # only the +5 % one is within ±10 %
    assert s["latency_p99_ms_inside_points"] == 0  # no interval, no count
    text, _ = render(rows, "t")
    line = next(x for x in text.splitlines() if x.startswith("- inside the real value"))
    assert line.endswith("latency p50 2/3 (intervals ±10%)")


def test_no_interval_for_a_percentile_the_requests_cannot_resolve(two_runs) -> None:
    """Resamples of 40 requests cannot go past the largest, so the bootstrap interval of
    their p99 (about the maximum) came out narrow where two runs differ widely: none is
    given below TAIL_SAMPLES values beyond the percentile; p50's stays."""
    from sim.validation.paired import TAIL_SAMPLES, _tail_resolved

    assert TAIL_SAMPLES == 5
    assert not _tail_resolved("p99", 60) and _tail_resolved("p99", 500)
    assert _tail_resolved("p50", 10) and _tail_resolved("mean", 1)
    rows = validate_runs(two_runs(False, 1), two_runs(False, 2), n_boot=200)
    assert rows
    for r in rows:
        assert math.isnan(r.real["latency_p99_ms"].low)  # 40 requests per point
        assert not math.isnan(r.real["latency_p99_ms"].value)
        p50 = r.real["latency_p50_ms"]
        assert p50.low <= p50.value <= p50.high


def test_the_report_counts_the_targets_per_value_of_each_swept_axis() -> None:
    """An acceptance per index variant ('5 of 6 points each') is read off one line per
    axis; an axis with one value gets none."""
    from sim.validation.paired import METRICS

    nan = math.nan

    def row(variant: str, index: str, p50: float, p99: float) -> ValidationRow:
        real = {name: Interval(nan, nan, nan) for name, *_ in METRICS}
        model = {name: nan for name, *_ in METRICS}
        real["latency_p50_ms"], model["latency_p50_ms"] = Interval(100.0, nan, nan), p50
        real["latency_p99_ms"], model["latency_p99_ms"] = Interval(100.0, nan, nan), p99
        return ValidationRow({"variant": variant, "workers": "1", "index": index}, real, model)

    rows = [
        row("scalar", "cached", 105.0, 120.0),  # p50 in, p99 out
        row("numpy", "cached", 95.0, 110.0),  # both in
        row("scalar", "device", 80.0, 100.0),  # p50 out, p99 in
        row("numpy", "device", 130.0, 200.0),  # both out
    ]
    text, _ = render(rows, "t")
    lines = [x for x in text.splitlines() if x.startswith("- by ")]
    assert lines == [
        "- by variant (latency p50 ±10%, p99 ±15%): scalar 1/2, 1/2; numpy 1/2, 1/2",
        "- by index (latency p50 ±10%, p99 ±15%): cached 2/2, 1/2; device 0/2, 1/2",
    ]


def test_the_real_side_against_itself_is_scored_as_the_model_is() -> None:
    """validate-model --aa: the second real run in the model's place, by the same targets,
    over the grid and per swept value (the acceptance's own unit)."""
    from sim.validation.paired import METRICS
    from sim.validation.report import again_line

    nan = math.nan

    def row(variant: str, first: float, second: float) -> ValidationRow:
        real = {name: Interval(nan, nan, nan) for name, *_ in METRICS}
        again = {name: nan for name, *_ in METRICS}
        for name in ("latency_p50_ms", "latency_p99_ms"):
            real[name], again[name] = Interval(first, nan, nan), second
        return ValidationRow({"variant": variant, "workers": "1"}, real, again)

    line = again_line([row("scalar", 100.0, 88.0), row("numpy", 50.0, 52.0)])  # -12 %, +4 %
    assert line.startswith("- the real side against itself (real-again/")
    assert "latency p50 1/2 within ±10%" in line and "p99 2/2 within ±15%" in line
    assert "by variant: scalar 0/1, 1/1; numpy 1/1, 1/1." in line
    assert "by workers" not in line  # one value: nothing per value
    assert again_line([]) == "- the real side against itself: no point ran in both real runs\n"
