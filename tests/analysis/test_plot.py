"""kvsim plot: every figure the run has data for, as a real PNG; engine figure only with steps."""

from __future__ import annotations

import pytest

from sim.analysis.plot import choose_x_axis, plot_results
from sim.cli import main
from sim.rundir.reader import load_results
from tests.analysis.test_compare import write_run  # the synthetic run directory builder

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _is_png(path) -> bool:
    data = path.read_bytes()
    return data.startswith(PNG_MAGIC) and len(data) > 10_000


def test_plot_writes_the_three_figures_without_steps(tmp_path) -> None:
    res = load_results(write_run(tmp_path / "run", n=80))
    paths = plot_results(res, tmp_path / "figs", n_boot=200)
    assert [p.name for p in paths] == [
        "latency_cdf.png",
        "latency_ccdf.png",
        "p99_latency.png",
        "gil_hold.png",
    ]
    assert all(_is_png(p) for p in paths)
    assert not (tmp_path / "figs" / "engine_steps.png").exists()


def test_plot_command_adds_the_engine_figure_when_steps_exist(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run", n=60, steps=True, repeats=2)
    assert main(["plot", str(run)]) == 0
    printed = capsys.readouterr().out.split()
    names = {p.rsplit("/", 1)[-1] for p in printed}
    assert names == {
        "latency_cdf.png",
        "latency_ccdf.png",
        "p99_latency.png",
        "gil_hold.png",
        "engine_steps.png",
    }
    assert all(_is_png(run / "figures" / n) for n in names)


def test_x_axis_choice(tmp_path) -> None:
    res = load_results(write_run(tmp_path / "run", n=20))
    assert choose_x_axis(res) == "workers"
    with pytest.raises(ValueError, match="not an axis"):
        choose_x_axis(res, "clients")
    assert main(["plot", str(tmp_path / "run"), "--x", "clients"]) == 2
