"""When the end table says the harness fell behind, and the harness bench's figures."""

from __future__ import annotations

import math

import pytest

from sim.analysis.behind import behind_note, fell_behind, lag_line, lagged
from sim.benches.harness import harness_point, measure_rate


def _row(**kw):
    base = {
        "inject_lag_p50_ms": 0.1,
        "inject_lag_p99_ms": 0.5,
        "noise_floor_p99_ms": 0.4,
        "offered_rps": 60.0,
        "achieved_rps": 60.0,
    }
    return {**base, **kw}


def test_a_point_on_schedule_is_not_marked() -> None:
    assert not fell_behind(_row())
    assert behind_note("variant=rows", _row()) is None
    # Lag p99 up to 1 ms plus the noise floor is within the harness's own noise.
    assert not fell_behind(_row(inject_lag_p99_ms=1.35))
    assert not fell_behind({})  # nothing known: no claim


def test_a_short_rate_is_loud_and_says_by_how_much() -> None:
    slow = _row(achieved_rps=57.8, inject_lag_p50_ms=33.0, inject_lag_p99_ms=68.0)
    assert fell_behind(slow)
    note = behind_note("variant=scalar · workers=4", slow)
    assert note is not None and "variant=scalar · workers=4" in note
    assert "57.8 of the 60.0 req/s" in note and "96.3 %" in note
    assert "68.0 ms" in note and "33.0 ms" in note
    assert lag_line([slow]) is None  # said loudly already, not again quietly


def test_lag_while_the_load_was_applied_is_a_figure_and_one_quiet_line() -> None:
    # Before: a lag p99 over the limit made a per-point warning even at 100 % applied.
    late = _row(inject_lag_p50_ms=33.0, inject_lag_p99_ms=68.0)
    assert lagged(late) and not fell_behind(late)
    assert behind_note("variant=scalar · workers=4", late) is None
    rows = [late, _row(inject_lag_p99_ms=12.5), _row()]
    line = lag_line(rows)
    assert line is not None and "\n" not in line
    assert line.startswith("note: on 2 of 3 points") and "up to 68.0 ms" in line
    assert lag_line([_row()]) is None


@pytest.mark.realthreads
def test_the_harness_bench_reports_its_figures() -> None:
    point = harness_point(500.0, 50)
    assert point.config.connector.variant == "noop" and not point.config.gil.probe
    row = measure_rate(500.0, 0.1, min_requests=50)
    assert row["requests"] == 50
    assert row["offered_rps"] == pytest.approx(500.0)
    assert row["harness_us_per_request"] > 0
    assert row["inject_lag_p99_ms"] >= row["inject_lag_p50_ms"] >= 0
    assert not math.isnan(row["achieved_rps"])


@pytest.mark.realthreads
def test_kvsim_bench_harness_prints_the_target_verdict_and_the_hot_cost(capsys) -> None:
    from sim.cli import main

    assert main(["bench", "harness", "--rates", "1000", "--seconds", "0.2", "--no-search"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "wake-ups" in out
    assert "run hot" in out and "µs per request" in out
    assert "at 1,000 req/s —" in out and ("NOT met" in out or "— met" in out)
    assert "× the target" in out
