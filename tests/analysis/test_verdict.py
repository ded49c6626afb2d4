"""The verdict: B/A with an interval from the spread between repeats (docs/statistics.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sim.analysis.compare import compare
from sim.analysis.report import comparison_markdown
from sim.analysis.verdict import MIN_REPEATS, ratio_verdict, t_quantile
from sim.cli import main
from sim.rundir.reader import load_results
from tests.analysis.test_compare import write_run


def test_t_quantiles_match_the_tables() -> None:
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 9: 2.262, 30: 2.042}
    for df, t in table.items():
        assert t_quantile(0.95, df) == pytest.approx(t, abs=1e-3)
    assert t_quantile(0.95, 10_000) == pytest.approx(1.960, abs=1e-3)
    assert t_quantile(0.99, 2) == pytest.approx(9.925, abs=1e-3)


def _runs(rng, centre, n_rep, drift=None, spread=0.03, rows=150, sigma=0.2):
    """Per-round request values: each run its own level (run-to-run spread), times a
    drift shared by the round (a machine changing speed)."""
    out = {}
    for k in range(n_rep):
        level = centre * math.exp(rng.normal(0, spread)) * (drift[k] if drift else 1.0)
        out[str(k)] = level * rng.lognormal(0, sigma, rows)
    return out


def test_one_repeat_gives_a_ratio_and_no_verdict() -> None:
    rng = np.random.default_rng(0)
    v = ratio_verdict(_runs(rng, 2.2, 1), _runs(rng, 2.0, 1), "mean")
    assert v.ratio == pytest.approx(1.1, abs=0.08)
    assert math.isnan(v.low) and not v.has_interval and not v.differs
    assert v.method == "none" and f"at least {MIN_REPEATS} repeats" in v.reason


def test_a_ten_percent_difference_is_found_and_identical_runs_mostly_are_not() -> None:
    # Runs that move 1% from one to the next, requests 10% (a stable metric, as a hold is).
    rng = np.random.default_rng(1)
    trials = 150

    def verdict(b: float, t: int):
        runs = tuple(_runs(rng, x, 3, spread=0.01, sigma=0.1) for x in (b, 2.0))
        return ratio_verdict(*runs, "mean", seed=t, n_boot=100)

    same = sum(verdict(2.0, t).differs for t in range(trials))
    found = sum(verdict(2.2, t).differs for t in range(trials))
    assert same / trials <= 0.08  # a 95% interval: about 5% by chance
    assert found / trials >= 0.8


def test_pairing_by_round_cancels_a_drift_that_unpaired_runs_cannot() -> None:
    rng = np.random.default_rng(2)
    hits = {True: 0, False: 0}
    for t in range(60):
        drift = [1.0, 1.6, 0.8]  # the machine's speed, round by round
        b = _runs(rng, 2.2, 3, drift, spread=0.01)
        a = _runs(rng, 2.0, 3, drift, spread=0.01)
        for paired in (True, False):
            hits[paired] += ratio_verdict(b, a, "mean", paired=paired, seed=t, n_boot=100).differs
    assert hits[True] >= 48 and hits[False] <= 6


def test_repeats_that_agree_by_chance_keep_the_within_run_floor() -> None:
    rng = np.random.default_rng(3)
    base = rng.lognormal(0, 0.5, 60)
    # Each round the very same rows: no spread between repeats at all.
    same = {str(k): base for k in range(3)}
    v = ratio_verdict({k: 1.05 * x for k, x in same.items()}, same, "p99", seed=0)
    assert v.ratio == pytest.approx(1.05)
    assert v.has_interval and v.high / v.low > 1.2  # the p99 of 60 rows is that noisy
    assert not v.differs


def test_a_figure_of_zero_gives_the_ratio_without_an_interval() -> None:
    zero = {str(k): np.zeros(10) for k in range(3)}
    some = {str(k): np.full(10, 0.5) for k in range(3)}
    v = ratio_verdict(zero, some, "mean")
    assert v.ratio == 0.0 and not v.has_interval and "zero" in v.reason
    assert math.isnan(ratio_verdict(some, zero, "mean").ratio)


def test_unpaired_and_rounds_one_side_lacks() -> None:
    rng = np.random.default_rng(4)
    b, a = _runs(rng, 3.0, 4), _runs(rng, 2.0, 3)
    paired = ratio_verdict(b, a, "mean")
    assert paired.repeats == 3 and paired.method == "paired rounds" and paired.differs
    unpaired = ratio_verdict(b, a, "mean", paired=False)
    assert unpaired.method == "unpaired runs" and unpaired.differs
    assert unpaired.ratio == pytest.approx(1.5, abs=0.1)


def test_compare_with_one_repeat_marks_nothing_and_says_why(tmp_path) -> None:
    comp = compare(load_results(write_run(tmp_path, repeats=1)), n_boot=200)
    text = comparison_markdown(comp, "run")
    assert comp.interval_cells == 0
    assert not [line for line in text.splitlines() if line.startswith("|") and "*" in line]
    assert "`*`" not in text and "]*" not in text
    assert "one repeat per point cannot show the run-to-run spread" in text
    assert f"at least {MIN_REPEATS} repeats" in text


def test_compare_with_repeats_accounts_for_its_many_cells(tmp_path) -> None:
    comp = compare(load_results(write_run(tmp_path, repeats=3)), n_boot=200)
    text = comparison_markdown(comp, "run")
    assert comp.interval_cells == 2 * 4  # 2 levels × (numpy vs scalar) × 4 metrics … with data
    assert f"{comp.interval_cells} ratio(s) have an interval" in text
    assert "about 0.4 here" in text and "]*" in text  # scalar and numpy do differ


def test_a_baseline_alone_is_not_blamed_on_one_repeat(tmp_path) -> None:
    # Three repeats, but the compared axis has one value: no ratio, for another reason.
    run = write_run(tmp_path, repeats=3, variants=("numpy",))
    comp = compare(load_results(run), baseline="numpy", n_boot=100)
    text = comparison_markdown(comp, "run")
    assert comp.interval_cells == 0 and "one repeat" not in text
    assert (
        "Nothing to compare" in text and "`kvsim compare --by AXIS`" in text and "workers" in text
    )


@pytest.mark.realthreads
def test_a_real_run_with_one_repeat_prints_no_star_anywhere(write_config, capsys) -> None:
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"]}})
    assert main(["run", str(path)]) == 0
    run_out = capsys.readouterr().out
    out_dir = path.parent / "out"
    assert main(["compare", str(out_dir), "--bootstrap", "200"]) == 0
    compare_out = capsys.readouterr().out
    for text in (run_out, compare_out, (out_dir / "compare.md").read_text()):
        assert "]*" not in text and "×*" not in text and "`*`" not in text, text
        assert not [ln for ln in text.splitlines() if ln.startswith("|") and "*" in ln], text
    assert "No verdicts" in compare_out
