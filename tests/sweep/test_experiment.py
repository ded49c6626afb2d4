"""The experiment as a whole: repeats aggregation, files kept current, manifest, end table."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from sim.config import parse_config
from sim.events import SweepEvents
from sim.rundir.combine import aggregate_repeats
from sim.rundir.guard import prepare_run_dir
from sim.rundir.outputs import read_csv
from sim.sweep.experiment import axis_columns, plan_sweep, run_experiment
from sim.sweep.identity import config_hash, first_difference


def test_aggregate_repeats_means_spreads_sums_and_statuses() -> None:
    rows = [
        {"variant": "a", "workers": 1, "repeat": 0, "requests": 10, "ok": 9, "failed": 1,
         "latency_p99_ms": "2.0", "note": "x", "status": "ok"},
        {"variant": "a", "workers": 1, "repeat": 1, "requests": 10, "ok": 10, "failed": 0,
         "latency_p99_ms": "4.0", "note": "y", "status": "ok"},
        {"variant": "a", "workers": 1, "repeat": 2, "status": "failed", "error": "boom"},
        {"variant": "b", "workers": 1, "repeat": 0, "requests": 10, "ok": 10, "failed": 0,
         "latency_p99_ms": "1.0", "status": "ok"},
    ]  # fmt: skip
    a, b = aggregate_repeats(rows, ["variant", "workers"], with_spread=True)
    assert a["repeats"] == 2 and a["status"] == "partial" and a["error"] == "boom"
    assert a["requests"] == 20 and a["ok"] == 19 and a["failed"] == 1  # counts add up
    assert a["latency_p99_ms"] == 3.0
    assert a["latency_p99_ms_std"] == pytest.approx(statistics.stdev([2.0, 4.0]))
    assert "requests_std" not in a  # no spread for counts
    assert a["note"] == "x; y"
    assert b["status"] == "ok" and b["repeats"] == 1 and math.isnan(b["latency_p99_ms_std"])
    (only,) = aggregate_repeats(rows[3:], ["variant", "workers"], with_spread=False)
    assert "latency_p99_ms_std" not in only


@pytest.mark.realthreads
def test_repeats_give_one_row_per_point_with_mean_and_spread(write_config, tmp_path) -> None:
    path = write_config({"repeats": 3, "sweep": {"connector.workers": [1, 2]}})
    cfg, points = parse_config(path)
    out = tmp_path / "out"
    prepare_run_dir(out, force=False)
    res = run_experiment(cfg, points, path, out, isolate=False)
    per_rep = read_csv(out / "summary_repeats.csv")
    summary = read_csv(out / "summary.csv")
    assert [(r["workers"], r["repeat"]) for r in per_rep] == [
        (w, k) for w in ("1", "2") for k in ("0", "1", "2")
    ]
    assert [r["workers"] for r in summary] == ["1", "2"]
    for row in summary:
        mine = [float(r["latency_p99_ms"]) for r in per_rep if r["workers"] == row["workers"]]
        assert float(row["latency_p99_ms"]) == pytest.approx(statistics.mean(mine), rel=1e-4)
        assert float(row["latency_p99_ms_std"]) == pytest.approx(statistics.stdev(mine), rel=1e-3)
        assert row["repeats"] == "3" and row["requests"] == "24" and row["status"] == "ok"
    # Different repeats draw different workloads (seeded by [seed, repeat]).
    req = read_csv(out / "requests.csv")
    assert len(req) == 48 and {r["repeat"] for r in req} == {"0", "1", "2"}
    assert len(res.summary_rows) == 2 and len(res.repeat_rows) == 6


@pytest.mark.realthreads
def test_top_level_files_are_current_after_each_point(write_config, tmp_path) -> None:
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"]}})
    cfg, points = parse_config(path)
    out = tmp_path / "out"
    prepare_run_dir(out, force=False)
    seen: list[tuple[int, str]] = []

    def on_done(rep, outcome) -> None:
        manifest = json.loads((out / "manifest.json").read_text())
        seen.append((len(read_csv(out / "requests.csv")), manifest["status"]))

    run_experiment(cfg, points, path, out, SweepEvents(finished=on_done), isolate=False)
    assert seen == [(8, "running"), (16, "running")]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["config_hash"] == config_hash(cfg)
    assert manifest["axes"] == axis_columns(points) == ["variant", "workers", "mode"]
    assert manifest["runs"] == {"total": 2, "done": 2, "failed": 0, "skipped": 0}
    assert {"requests.csv", "summary.csv", "summary_repeats.csv"} <= set(manifest["files"])
    assert not list(out.rglob(".*.tmp"))


def test_plan_of_an_empty_directory_is_all_pending(write_config, tmp_path) -> None:
    path = write_config({"repeats": 2})
    cfg, points = parse_config(path)
    plan = plan_sweep(cfg, points, tmp_path / "nothing-here")
    assert [r.state for r in plan.runs] == ["pending", "pending"]
    assert not plan.existing and plan.difference == ""


def test_first_difference_names_the_field() -> None:
    old = {"model": {"regions": 61, "block_len": [1, 2]}, "seed": 1}
    assert first_difference(old, old) is None
    assert first_difference(old, {**old, "seed": 2}) == "seed: 1 → 2"
    new = {**old, "model": {"regions": 61, "block_len": [1, 3]}}
    assert first_difference(old, new) == "model.block_len[1]: 2 → 3"
    assert first_difference(old, {**old, "sweep": {}}) == "sweep: (absent) → {}"
    # as the user wrote it (sweep: {order: grid}), not as the config model holds it
    order = {**old, "sweep_order": "interleaved"}
    grid = {**old, "sweep_order": "grid"}
    assert first_difference(order, grid) == "sweep.order: 'interleaved' → 'grid'"


def test_config_hash_ignores_only_the_output_dir(write_config) -> None:
    a, _ = parse_config(write_config({"output": {"dir": "somewhere"}}))
    b, _ = parse_config(write_config({"output": {"dir": "elsewhere"}}))
    c, _ = parse_config(write_config({"output": {"dir": "elsewhere"}, "seed": 4}))
    assert config_hash(a) == config_hash(b) != config_hash(c)
