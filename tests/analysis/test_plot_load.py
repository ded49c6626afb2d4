"""kvsim plot: latency against offered load (hockey stick), the tail on log scale, a title
naming the run on every figure, and layouts that clip nothing."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from sim.analysis import figures, figures_load
from sim.analysis.plot import Layout
from sim.cli import main
from sim.rundir.outputs import read_csv, write_csv, write_json
from sim.rundir.reader import load_results
from tests.analysis.test_compare import write_run


def rate_run(path):
    """Two variants at four offered rates; latency turns up past each one's capacity."""
    rng = np.random.default_rng(1)
    summary, requests = [], []
    for variant, capacity in (("scalar", 40.0), ("numpy", 160.0)):
        for rate in (10, 20, 40, 80, 160):
            load = rate / capacity
            base = {"variant": variant, "workers": 1, "rate_rps": rate}
            lat = 5 + 5 * rng.exponential(1 / max(1e-3, 1.2 - load), 100) * (1 + 10 * (load > 1))
            requests += [{**base, "repeat": 0, "latency_ms": v, "gil_hold_ms": 1.0} for v in lat]
            summary.append(
                {**base, "repeats": 1, "status": "ok",
                 "latency_p50_ms": float(np.percentile(lat, 50)),
                 "latency_p99_ms": float(np.percentile(lat, 99)),
                 "offered_rps": rate * 1.01, "achieved_rps": min(rate, capacity),
                 "noise_floor_p99_ms": 0.8}
            )  # fmt: skip
    path.mkdir()
    write_json(path / "manifest.json", {"tool": "kvsim", "status": "complete", "repeats": 1,
               "axes": ["variant", "workers", "rate_rps"], "config": {"name": "load"}})  # fmt: skip
    write_csv(path / "summary.csv", list(summary[0]), summary)
    write_csv(path / "requests.csv", list(requests[0]), requests)
    return path


def test_hockey_stick_is_a_panel_per_variant_with_the_floor_band_and_measured_x(tmp_path) -> None:
    res = load_results(rate_run(tmp_path / "run"))
    assert figures_load.rate_axis(res) == "rate_rps"
    fig = figures_load.latency_vs_rate(plt, res, "rate_rps")
    top_scalar, top_numpy, got_scalar, got_numpy = fig.axes  # small multiples, not overlaid
    assert [ax.get_title() for ax in (top_scalar, top_numpy)] == ["scalar", "numpy"]
    assert [ln.get_label() for ln in top_scalar.get_lines()] == ["p99", "p50"]
    p99 = top_scalar.get_lines()[0]
    assert np.allclose(p99.get_xdata(), np.array([10, 20, 40, 80, 160]) * 1.01)  # offered_rps
    assert "measured" in got_scalar.get_xlabel()
    for top in (top_scalar, top_numpy):
        band = [c for c in top.collections if c.get_label().startswith("harness noise floor")]
        assert len(band) == 1
    assert np.allclose(got_scalar.get_lines()[0].get_ydata(), [10, 20, 40, 40, 40])  # achieved
    assert np.allclose(got_numpy.get_lines()[0].get_ydata(), [10, 20, 40, 80, 160])
    assert top_scalar.get_ylim() == top_numpy.get_ylim()  # one scale: columns compare
    plt.close(fig)


def test_a_log_axis_over_less_than_a_decade_still_has_several_labels(tmp_path) -> None:
    """The CCDF of a tail from 40 to 300 ms had one x label ("100")."""
    fig, ax = plt.subplots()
    ax.plot([40, 300], [1, 0.01])
    figures_load.plain_log_x(ax)
    fig.canvas.draw()
    lo, hi = ax.get_xlim()
    shown = [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
    assert len([t for t in shown if t]) >= 3, shown
    plt.close(fig)


def _plotted_titles(run):
    """``kvsim plot RUN``'s figures, file name -> suptitle, as they were saved."""
    titles = {}
    real = matplotlib.figure.Figure.savefig

    def spy(fig, path, *a, **kw):
        titles[str(path).rsplit("/", 1)[-1]] = fig.get_suptitle()
        return real(fig, path, *a, **kw)

    matplotlib.figure.Figure.savefig = spy
    try:
        assert main(["plot", str(run)]) == 0
    finally:
        matplotlib.figure.Figure.savefig = real
    return titles


def test_plot_command_draws_ccdf_and_hockey_stick_titled_with_the_run(tmp_path, capsys):
    titles = _plotted_titles(rate_run(tmp_path / "run"))
    assert {"latency_ccdf.png", "latency_vs_rate.png"} <= set(titles)
    assert all("run load · run" in t for t in titles.values()), titles


def test_ccdf_is_log_log_and_reaches_the_tail(tmp_path) -> None:
    res = load_results(write_run(tmp_path / "run", n=200))
    layout = Layout(list(res.axes), "workers")
    fig = figures_load.latency_ccdf(plt, res, layout)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    line = ax.get_lines()[0]
    assert line.get_ydata()[0] == 1.0 and line.get_ydata()[-1] == pytest.approx(1 / 200)
    plt.close(fig)


def test_one_workers_value_keeps_series_apart_and_error_bars_inside(tmp_path) -> None:
    run = write_run(tmp_path / "run", n=100)
    for stem in ("summary", "summary_repeats", "requests"):
        rows = [r for r in read_csv(run / f"{stem}.csv") if r["workers"] == "1"]
        write_csv(run / f"{stem}.csv", list(rows[0]), rows)
    res = load_results(run)
    layout = Layout(list(res.axes), "workers")
    fig = figures.p99_vs_x(plt, res, layout, 200, 0)
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    xs = [x for ln in ax.get_lines() for x in np.atleast_1d(ln.get_xdata())]
    assert hi - lo <= 1.5  # not stretched to the dodge
    assert all(lo + 0.1 * (hi - lo) < x < hi - 0.1 * (hi - lo) for x in xs)
    tops = [seg[:, 1].max() for c in ax.collections for seg in c.get_segments()]
    assert max(tops) < ax.get_ylim()[1]  # the highest error bar is not clipped
    plt.close(fig)
    # the CDF figure is as large as the single-panel ones beside it
    cdf = figures.latency_cdf(plt, res, layout)
    assert tuple(cdf.get_size_inches()) == tuple(fig.get_size_inches())
    plt.close(cdf)


def test_plot_warns_about_a_partial_run(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run", n=50)
    m = json.loads((run / "manifest.json").read_text())
    write_json(
        run / "manifest.json", {**m, "status": "interrupted", "runs": {"done": 3, "total": 4}}
    )
    assert main(["plot", str(run)]) == 0
    assert "the run was interrupted (3 of 4 point runs finished)" in capsys.readouterr().err


def test_engine_step_markers_are_not_clipped(tmp_path) -> None:
    res = load_results(write_run(tmp_path / "run", n=40, steps=True))
    fig = figures.engine_steps(plt, res, Layout(list(res.axes), "workers"))
    for ax in fig.axes:
        data = [ln for ln in ax.get_lines() if ln.get_marker() not in (None, "", "None")]
        top = max(np.nanmax(ln.get_ydata()) for ln in data)
        lo, hi = ax.get_xlim()
        xs = [x for ln in data for x in np.atleast_1d(ln.get_xdata())]
        assert top < ax.get_ylim()[1] and lo < min(xs) and max(xs) < hi
    plt.close(fig)


def test_a_run_in_a_directory_of_its_name_is_named_once(tmp_path) -> None:
    titles = _plotted_titles(rate_run(tmp_path / "load"))  # results/<name>: the usual place
    assert titles and all(t.endswith("run load") for t in titles.values()), titles


def test_the_step_inflation_shows_the_interval_its_short_baseline_allows(tmp_path) -> None:
    """Step p99 ÷ the p99 of a 50-step 'alone' phase read 0.94× and 2.12× for the same step
    p99: the ratio is drawn with its bootstrap interval, both phases resampled."""
    res = load_results(write_run(tmp_path / "run", n=40, steps=True))
    fig = figures.engine_steps(plt, res, Layout(list(res.axes), "workers"), 300, 0)
    right = fig.axes[1]
    assert "95% bootstrap interval" in right.get_title()
    assert "steps per point" in right.get_title()
    assert right.containers
    for drawn in right.containers:  # one errorbar per series: a bar around every ratio
        ratios = np.atleast_1d(drawn.lines[0].get_ydata())
        (bars,) = drawn.lines[2]
        assert len(bars.get_segments()) == len(ratios) > 0
        for seg, ratio in zip(bars.get_segments(), ratios, strict=True):
            low, high = sorted(seg[:, 1])
            assert low <= ratio <= high and high > low  # an interval, not a point
    plt.close(fig)
