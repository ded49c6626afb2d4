"""Per-stage holds end to end: the run's table, the files, compare and the stacked-bar figure."""

from __future__ import annotations

import csv

import pytest

from sim.analysis.stage_report import has_stages, stage_cells
from sim.cli import main
from sim.point.records import HOLD_STAGE_COLUMNS

pytestmark = pytest.mark.realthreads


def test_stage_cells_format_and_missing_values() -> None:
    row = {
        "hold_keys_mean_ms": "1.234",
        "hold_addresses_mean_ms": "2",
        "hold_free_mean_ms": "0.5",
        "hold_gc_mean_ms": "nan",
        "gil_hold_mean_ms": "3.734",
        "gc_per_request": "2.25",
    }
    cells = stage_cells(row)
    assert cells[:6] == ["1.23", "2.00", "0.50", "—", "3.73", "—"]
    assert cells[6] == "2.2" and cells[7] == "—"
    assert has_stages([row]) and not has_stages([{"gil_hold_mean_ms": "3"}])


def test_run_prints_stages_writes_them_and_compare_and_plot_use_them(
    write_config, tmp_path, capsys
) -> None:
    out = tmp_path / "run"
    path = write_config(
        {
            # 1,000 chunks a request: numpy and scalar build ~2,000 lists each, so the
            # collector (a young collection every 700 new containers) surely runs
            "workload": {"requests": 6, "tokens": 16_000},
            "model": {"num_blocks": 4096},
            "sweep": {"connector.variant": ["scalar", "numpy"]},
        }
    )
    assert main(["run", str(path), "--out", str(out), "--in-process"]) == 0
    printed = capsys.readouterr().out
    assert "where the hold goes" in printed and "addresses" in printed

    rows = list(csv.DictReader((out / "requests.csv").open()))
    assert len(rows) == 12
    for r in rows:
        total = sum(float(r[c]) for c in HOLD_STAGE_COLUMNS)
        # each value is written with 6 significant digits: 5 roundings of <= 5e-6 relative
        assert total == pytest.approx(float(r["gil_hold_ms"]), rel=2e-5, abs=1e-6)
    summary = list(csv.DictReader((out / "summary.csv").open()))
    assert all(float(s["hold_addresses_mean_ms"]) > 0 for s in summary)
    gc_rows = list(csv.DictReader((out / "gc.csv").open()))
    assert gc_rows and set(gc_rows[0]) >= {"thread", "role", "generation", "collections"}
    in_requests = sum(int(r[f"gc_gen{g}"]) for r in rows for g in range(3))
    on_load_threads = sum(int(g["collections"]) for g in gc_rows if g["role"] == "load")
    assert 0 < in_requests <= on_load_threads

    assert (
        main(
            [
                "compare",
                str(out),
                "--metric",
                "hold_gc_mean_ms",
                "--metric",
                "hold_addresses_p99_ms",
            ]
        )
        == 0
    )
    md = (out / "compare.md").read_text()
    assert "gc hold/req" in md and "addresses hold/req" in md

    assert main(["plot", str(out)]) == 0
    fig = out / "figures" / "hold_stages.png"
    assert fig.read_bytes().startswith(b"\x89PNG") and fig.stat().st_size > 10_000
