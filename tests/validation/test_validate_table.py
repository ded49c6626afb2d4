"""validate-model's printed report (sim.validation.table): 100 columns, headings, rules."""

from __future__ import annotations

import math

from sim.analysis.bootstrap import Interval
from sim.validation.paired import ValidationRow
from sim.validation.table import WIDTH, point_cell, prediction_table, wrap
from sim.validation.verdict import judge

nan = math.nan


def _row(key: dict[str, str], real: float, other: float) -> ValidationRow:
    return ValidationRow(
        key,
        {m: Interval(real, nan, nan) for m in ("latency_p50_ms", "latency_p99_ms")},
        {"latency_p50_ms": other, "latency_p99_ms": other},
    )


def test_the_table_fits_100_columns_with_a_heading_per_axis_and_a_rule_per_point() -> None:
    keys = [
        {"variant": v, "workers": w, "engine.index_variant": i}
        for v in ("scalar", "per_component_numpy_long_name")
        for w in ("1", "4")
        for i in ("cached", "device")
    ]
    model = [_row(k, 1234.5, 1234.5 * (1.22 if k["workers"] == "4" else 1.0)) for k in keys]
    again = [_row(k, 1234.5, 1234.5 * (0.8 if k["variant"] == "scalar" else 1.0)) for k in keys]
    text = prediction_table(model, judge(model, again), "Prediction: a long title " * 6)
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= WIDTH, max(lines, key=len)
    assert "By variant (passed: by the target + by repeatability):" in lines
    assert "By workers (passed: by the target + by repeatability):" in lines
    rows = [x for x in lines if x.startswith(("scalar", "per_compo"))]
    assert len(rows) == len(keys)
    # scalar × 4: +22 % beside the real side's −20 %: passed by repeatability; the long
    # variant's × 4 (real side repeats to 0 %): outside; every × 1: by the target
    assert all(" repeat " in x or x.endswith("repeat") for x in rows if x.startswith("scalar 4"))
    assert all("✗" in x for x in rows if x.startswith("per_compo") and " 4 " in x)
    assert all("target" in x for x in rows if " 1 " in x)
    assert any(x.startswith("Verdict: ") for x in lines)


def test_a_long_point_is_abbreviated_and_prose_wrapped() -> None:
    cell = point_cell({"a": "x" * 40})
    assert len(cell) == 26 and cell.endswith("~")
    long = "- " + "word " * 60
    got = wrap(long).splitlines()
    assert all(len(x) <= WIDTH for x in got) and got[1].startswith("  word")
    assert wrap("| a | b |" * 30) == "| a | b |" * 30  # a markdown row is left whole


def test_the_speed_line_says_how_far_the_machine_moved_and_what_was_scaled() -> None:
    from sim.calibration.speed import speed_line

    line = speed_line({0: [0.96, 1.08], 1: [1.0, 3.0, 1.02]})
    assert "−4% … +200% against the calibration" in line and "5 probes" in line
    assert "machine.cpu_scale 1.02–1.02" in line  # each point's median
    assert "not scaled" in speed_line({0: [1.0]}, scaled=False)
    assert "not probed" in speed_line({})


def test_the_mechanism_table_fits_100_columns_even_at_errors_past_999_percent() -> None:
    from types import SimpleNamespace

    from sim.model.replay import MECHANISM_TARGETS
    from sim.validation.table import mechanism_table

    names = ("latency_mean_ms", "latency_p50_ms", "latency_p99_ms", "gil_wait_mean_ms")
    point = SimpleNamespace(
        axes={"variant": "scalar", "workers": 1, "index_variant": "per_component", "mode": "real"},
        real=dict.fromkeys(names, 1234.5),
        model=dict.fromkeys(names, 99999.0),
        error=dict.fromkeys(names, 80.0),
        within=dict.fromkeys(names, False),
    )
    text = mechanism_table([point, point], MECHANISM_TARGETS, "Mechanism")
    assert max(len(x) for x in text.splitlines()) <= WIDTH
    assert ">+999%✗" in text and "Each point by its variant, workers, index_variant:" in text
    assert "Verdict: outside target" in text and "every target at 0/2 points" in text
