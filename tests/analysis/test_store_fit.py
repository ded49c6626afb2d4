"""``kvsim calibrate store``: the modelled store's latency and bandwidth from real gets."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from sim.analysis.store_fit import fit_store
from sim.cli import main
from sim.rundir.guard import RunDirError


def _fake_run(tmp_path: Path, kinds: dict[int, str], ms_of) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(
        json.dumps({"tool": "kvsim", "axes": ["variant", "workers"]})
    )
    with open(run / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, ["variant", "workers", "requests", "store_kind"])
        w.writeheader()
        for workers, kind in kinds.items():
            w.writerow({"variant": "numpy", "workers": workers, "requests": 5, "store_kind": kind})
    with open(run / "requests.csv", "w", newline="") as f:
        cols = ["variant", "workers", "status", "transfer_bytes", "transfer_ms"]
        w = csv.DictWriter(f, cols)
        w.writeheader()
        for workers in kinds:
            for i in range(1, 6):
                nbytes = i * 1_000_000
                row = {"variant": "numpy", "workers": workers, "status": "ok"}
                w.writerow({**row, "transfer_bytes": nbytes, "transfer_ms": ms_of(workers, nbytes)})
            w.writerow({**row, "status": "failed", "transfer_bytes": 0, "transfer_ms": 99.0})
    return run


def test_the_fit_recovers_latency_and_bandwidth_of_the_least_contended_points(tmp_path):
    # 1 thread: 0.5 ms + bytes at 2 GB/s; 4 threads: twice as slow (shared bandwidth)
    run = _fake_run(
        tmp_path, {1: "mooncake", 4: "mooncake"}, lambda w, b: 0.5 + b / 2e6 * ((w == 4 and 2) or 1)
    )
    fit = fit_store(run)
    assert fit.workers == 1 and fit.requests == 5
    assert fit.latency_ms == pytest.approx(0.5)
    assert fit.bandwidth_gb_per_s == pytest.approx(2.0)
    assert fit.r2 == pytest.approx(1.0)
    slow = fit_store(run, workers=4)
    assert slow.bandwidth_gb_per_s == pytest.approx(1.0)
    assert fit.settings()["kind"] == "model"


def test_the_command_prints_settings_and_json(tmp_path, capsys):
    run = _fake_run(tmp_path, {1: "mooncake"}, lambda w, b: 1.0 + b / 1e6)
    assert main(["calibrate", "store", str(run)]) == 0
    out = capsys.readouterr().out
    assert "latency 1.000 ms + bytes / 1.000 GB/s" in out and "kind: model" in out
    assert main(["calibrate", "store", str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["latency_ms"] == pytest.approx(1.0)


def test_a_run_without_real_store_points_is_refused_in_one_line(tmp_path, capsys):
    run = _fake_run(tmp_path, {1: "model"}, lambda w, b: 1.0)
    with pytest.raises(RunDirError, match=r"no finished point ran with store\.kind: mooncake"):
        fit_store(run)
    assert main(["calibrate", "store", str(run)]) != 0
    assert "store.kind: mooncake" in capsys.readouterr().err


def test_one_size_cannot_give_two_parameters(tmp_path):
    run = _fake_run(tmp_path, {1: "mooncake"}, lambda w, b: 1.0)
    with open(run / "requests.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["transfer_bytes"] = "1000" if r["status"] == "ok" else "0"
    with open(run / "requests.csv", "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(RunDirError, match="at least two"):
        fit_store(run)
