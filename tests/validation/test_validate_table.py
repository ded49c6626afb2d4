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


def _judged(axes, real, model, draws: int, wait_applies: bool = True):
    """A replayed point (sim.model.replay.ReplayPoint's fields) judged by the mechanism's
    targets; ``wait_applies`` False: the GIL wait's target does not apply (GIL off)."""
    from types import SimpleNamespace

    from sim.model.replay import MECHANISM_TARGETS

    within = {m: t.met(real[m], model[m]) for m, t in MECHANISM_TARGETS.items()}
    if not wait_applies:
        within["gil_wait_mean_ms"] = None
    return SimpleNamespace(
        axes=axes,
        real=real,
        model=model,
        error=dict.fromkeys(MECHANISM_TARGETS, 0.0),
        within=within,
        draws=draws,
        model_range={},
    )


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
        draws=8,
        model_range=dict.fromkeys(names, (90000.0, 110000.0)),
    )
    text = mechanism_table([point, point], MECHANISM_TARGETS, "Mechanism")
    assert max(len(x) for x in text.splitlines()) <= WIDTH
    assert ">+999%✗" in text and "Each point by its variant, workers, index_variant:" in text
    flat = " ".join(text.split())  # the verdict is wrapped at 100 columns
    assert "Verdict: outside target" in flat and "every target at 0/2 points" in flat


def test_a_gil_wait_neither_side_has_does_not_count_as_a_miss() -> None:
    """A point run with the GIL off has no GIL wait, real or replayed: its GIL-wait target
    does not apply (it read ``–✗`` and held every GIL-off grid below 90 %), while a point
    whose model lost a figure the real run has still misses."""
    import math
    from types import SimpleNamespace

    from sim.model.replay import MECHANISM_TARGETS
    from sim.validation.table import mechanism_table
    from sim.validation.verdict import mechanism_verdict

    names = list(MECHANISM_TARGETS)
    nan = math.nan

    def point(gil: str, wait_real: float, wait_model: float) -> SimpleNamespace:
        real = {**dict.fromkeys(names, 10.0), "gil_wait_mean_ms": wait_real}
        model = {**dict.fromkeys(names, 10.0), "gil_wait_mean_ms": wait_model}
        applies = not (math.isnan(wait_real) and math.isnan(wait_model))
        return _judged({"gil": gil}, real, model, draws=1, wait_applies=applies)

    on, off = point("on", 1.0, 1.0), point("off", nan, nan)
    text = mechanism_table([on, off], MECHANISM_TARGETS, "Mechanism")
    flat = " ".join(text.split())  # the verdict is wrapped at 100 columns
    assert "gil wait mean ±15% or 0.1 ms 1/1" in flat and "every target at 2/2 points" in flat
    assert "Verdict: within target" in flat and "–✗" not in text
    assert mechanism_verdict([off.within], names) == "within target"
    lost = point("off", 1.0, nan)  # the model lost a figure the real run has: a miss
    assert lost.within["gil_wait_mean_ms"] is False
    assert mechanism_verdict([on.within, lost.within], names) == "outside target"


def test_the_mechanism_table_says_how_far_one_draw_of_the_model_strays() -> None:
    """The model column is a mean over draws of its random choices; the line under the
    verdict gives one draw's spread of the GIL wait around it, over the points whose wait
    reaches the target's 0.1 ms floor (a 0.01 ms wait's ±100 % says nothing)."""
    from types import SimpleNamespace

    from sim.model.replay import MECHANISM_TARGETS
    from sim.validation.table import mechanism_table

    names = list(MECHANISM_TARGETS)

    def point(wait: float, lo: float, hi: float, draws: int = 8) -> SimpleNamespace:
        figures = {**dict.fromkeys(names, 10.0), "gil_wait_mean_ms": wait}
        return SimpleNamespace(
            axes={"workers": 1},
            real=figures,
            model=figures,
            error=dict.fromkeys(names, 0.0),
            within=dict.fromkeys(names, True),
            draws=draws,
            model_range={"gil_wait_mean_ms": (lo, hi)},
        )

    points = [point(1.0, 0.9, 1.1), point(2.0, 1.0, 3.0), point(4.0, 3.6, 4.4), point(0.01, 0, 1)]
    flat = " ".join(mechanism_table(points, MECHANISM_TARGETS, "M").split())
    assert "the mean of 8 draws of its own random choices" in flat
    assert "strays ±10% from it at the median point of 3 with a GIL wait of 0.1 ms" in flat
    assert "±50% at most" in flat
    one = " ".join(mechanism_table([point(1.0, 1.0, 1.0, 1)], MECHANISM_TARGETS, "M").split())
    assert "model: one draw of its own random choices" in one and "strays" not in one


def test_the_mechanism_verdict_reads_what_the_real_side_repeats() -> None:
    """With a second real run (--aa), a target the real side meets against itself at fewer
    than half its points judges nothing: the model's misses there do not make the verdict
    'outside target', and a grid otherwise within reads 'this machine cannot judge it'; a
    miss on a target the real side repeats still does."""
    from sim.validation.verdict import CANNOT_JUDGE, NOT_WITHIN, WITHIN, mechanism_verdict

    names = ["latency_mean_ms", "gil_wait_mean_ms"]
    model = [{"latency_mean_ms": True, "gil_wait_mean_ms": i < 5} for i in range(10)]
    noisy = [{"latency_mean_ms": True, "gil_wait_mean_ms": i < 4} for i in range(10)]
    steady = [{"latency_mean_ms": True, "gil_wait_mean_ms": True} for _ in range(10)]
    assert mechanism_verdict(model, names) == NOT_WITHIN  # no second run: 5/10 misses
    assert mechanism_verdict(model, names, noisy) == CANNOT_JUDGE  # the real side: 4/10
    assert mechanism_verdict(model, names, steady) == NOT_WITHIN
    assert mechanism_verdict(steady, names, steady) == WITHIN
    late = [{"latency_mean_ms": i < 8, "gil_wait_mean_ms": True} for i in range(10)]
    assert mechanism_verdict(late, names, noisy) == NOT_WITHIN  # latency: repeated, missed


def test_what_a_perfect_model_could_meet_is_read_from_the_two_real_runs() -> None:
    """A model right at a point's expected figure lands within the tolerance t of one real
    run with probability erf(t / |second - first|): 1 where the runs agree, erf(1) where
    they differ by exactly the tolerance, near t/|d| * 2/sqrt(pi) far beyond it; a target
    that does not apply at a point (a GIL-off point's wait) is left out of its sum."""
    from types import SimpleNamespace

    from sim.model.replay import MECHANISM_TARGETS
    from sim.validation.table import mechanism_table
    from sim.validation.verdict import perfect_model_counts

    names = list(MECHANISM_TARGETS)
    wait = "gil_wait_mean_ms"

    def pair(first: float, second: float, wait_applies: bool = True) -> SimpleNamespace:
        real = {**dict.fromkeys(names, first), wait: 1.0}
        model = {**dict.fromkeys(names, second), wait: 1.0}
        return _judged({"workers": 1}, real, model, draws=0, wait_applies=wait_applies)

    same, edge, far = pair(10.0, 10.0), pair(10.0, 10.5), pair(10.0, 20.0, wait_applies=False)
    counts = perfect_model_counts([same, edge, far], MECHANISM_TARGETS)
    mean = counts["latency_mean_ms"]  # ±5 %: 0.5 ms of 10
    assert math.isclose(mean, 1 + math.erf(1) + math.erf(0.05), rel_tol=1e-12)
    p99 = counts["latency_p99_ms"]  # ±10 %: 1 ms of 10, twice the edge point's difference
    assert math.isclose(p99, 1 + math.erf(2) + math.erf(0.1), rel_tol=1e-12)
    assert counts[wait] == 2.0  # the far point's wait does not apply; the others agree
    text = mechanism_table([same, edge, far], MECHANISM_TARGETS, "M", again=[same, edge, far])
    flat = " ".join(text.split())
    assert f"latency mean {mean:.1f}/3" in flat and "gil wait mean 2.0/2" in flat
    assert "would be expected to meet, by the spread of the two real runs" in flat
