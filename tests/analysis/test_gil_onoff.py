"""The on/off table (sim.analysis.gil_onoff) on a synthetic run directory with known
latencies: the GIL costs scalar a third of its latency at 4 workers, numpy nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.analysis.gil_onoff import gil_axis, gil_onoff_lines, gil_onoff_report
from sim.cli import main
from sim.rundir.outputs import write_csv, write_json
from sim.rundir.reader import load_results

#: Median latency (ms) with the GIL on; with it off, times OFF_RATIO.
LAT_ON = {"scalar": 120.0, "numpy": 30.0}
OFF_RATIO = {("scalar", 1): 1.0, ("scalar", 4): 0.66, ("numpy", 1): 1.0, ("numpy", 4): 1.0}
#: A request's thread CPU (ms) with the GIL on; with it off, times CPU_OFF_RATIO.
CPU_MS = 60.0
CPU_OFF_RATIO = {"scalar": 1.3, "numpy": 1.0}


def write_run(path: Path, repeats: int = 3, n: int = 300, cores: int = 2) -> Path:
    rng = np.random.default_rng(3)
    axes = ["variant", "workers", "gil"]
    summary, per_rep, requests = [], [], []
    for variant in LAT_ON:
        for workers in (1, 4):
            for gil in ("on", "off"):
                base = {"variant": variant, "workers": workers, "gil": gil}
                scale = LAT_ON[variant] * (OFF_RATIO[(variant, workers)] if gil == "off" else 1)
                for rep in range(repeats):
                    lat = scale * rng.lognormal(0.0, 0.2, n)
                    cpu = CPU_MS * (CPU_OFF_RATIO[variant] if gil == "off" else 1.0)
                    requests += [
                        {**base, "repeat": rep, "request_id": i, "latency_ms": lat[i],
                         "status": "ok", "thread_cpu_ms": cpu * rng.uniform(0.95, 1.05)}
                        for i in range(n)
                    ]  # fmt: skip
                    per_rep.append({**base, "repeat": rep, "status": "ok"})
                summary.append({**base, "repeats": repeats, "status": "ok"})
    write_json(
        path / "manifest.json",
        {"tool": "kvsim", "axes": axes, "repeats": repeats, "config": {"name": "onoff"},
         "machine": {"cpu_count": cores, "cpu_affinity": cores}},
    )  # fmt: skip
    write_csv(path / "summary.csv", list(summary[0]), summary)
    write_csv(path / "summary_repeats.csv", list(per_rep[0]), per_rep)
    write_csv(path / "requests.csv", list(requests[0]), requests)
    return path


def _row(lines: list[str], variant: str, workers: int) -> list[str]:
    (row,) = [ln for ln in lines if ln.split()[:2] == [variant, str(workers)]]
    return row.split()


def test_the_table_sets_on_beside_off_with_the_ratio_and_its_interval(tmp_path) -> None:
    lines = gil_onoff_lines(load_results(write_run(tmp_path)), n_boot=300)
    head = lines[1].split("  ")
    assert [h.strip() for h in head if h.strip()][2:6] == [
        "p50 on", "p50 off", "off÷on p50", "GIL cost p50"
    ]  # fmt: skip
    cells = _row(lines, "scalar", 4)
    on, off = float(cells[2]), float(cells[3])
    assert abs(on - 120) < 8 and abs(off - 79) < 6
    ratio, low, high = float(cells[4]), float(cells[5][1:-1]), float(cells[6].rstrip("]*"))
    assert low < 0.66 < high and high < 1 and cells[6].endswith("*")  # excludes 1: marked
    assert cells[7] == f"{round((1 - ratio) * 100)}%"  # the GIL's cost: what goes with it
    flat = _row(lines, "numpy", 4)
    assert float(flat[5][1:-1]) < 1.0 < float(flat[6].rstrip("]"))  # numpy: nothing
    assert not any(ln.count("-0%") for ln in lines)
    # the thread CPU a request with the GIL off over on: threads that slow each other
    assert lines[1].rstrip().endswith("CPU/req off÷on")
    assert float(cells[-1].rstrip("*")) == pytest.approx(1.3, abs=0.03)
    assert float(flat[-1].rstrip("*")) == pytest.approx(1.0, abs=0.03)


def test_core_note_and_nothing_for_a_run_without_both_sides(tmp_path) -> None:
    lines = gil_onoff_lines(load_results(write_run(tmp_path / "a")), n_boot=50)
    assert lines[-1].startswith("this machine: 2 cores; with the GIL off, 4 workers compete")
    lines = gil_onoff_lines(load_results(write_run(tmp_path / "b", cores=8)), n_boot=50)
    assert lines[-1] == "this machine: 8 cores"
    assert gil_axis(load_results(write_run(tmp_path / "c"))) == "gil"
    assert gil_onoff_report(tmp_path / "nothing-here")[0].startswith(
        "the GIL's own cost: not computed ("
    )


def test_one_repeat_gives_ratios_without_intervals(tmp_path) -> None:
    lines = gil_onoff_lines(load_results(write_run(tmp_path, repeats=1)), n_boot=50)
    cells = _row(lines, "scalar", 4)
    (legend,) = [ln for ln in lines if ln.startswith("off÷on: ")]
    assert "[" not in " ".join(cells) and "repeats: 1" in legend


def test_kvsim_compare_prints_it_after_its_own_table(tmp_path, capsys) -> None:
    run = write_run(tmp_path / "run")
    assert main(["compare", str(run), "--bootstrap", "100", "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "the GIL's own cost · onoff" in out
    assert out.index("the GIL's own cost") > out.index("scalar")


def test_kvsim_report_has_the_table_in_its_page(tmp_path, capsys) -> None:
    from sim.analysis.pr_report import pr_markdown

    page = pr_markdown(load_results(write_run(tmp_path / "run")), n_boot=100)
    assert "### The GIL's own cost" in page and "off÷on p50" in page
