"""A model-mode sweep's run directory: the same bytes as the reference writers, whole
after Ctrl-C, and a resume that ends where an uninterrupted run ends.

Model-mode points run in the sweep's own process and their combined tables are
rewritten only now and then (``sim.sweep.experiment``), joined from the point
runs' files (``sim.rundir.parts``) and written column by column
(``sim.rundir.csv_cells``). These tests hold the result against the reference path
(``tests/rundir/test_csv_cells.py``: ``csv.DictWriter`` rows, files parsed back and
written again), and check that what a run leaves at any end is consistent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sim.config import parse_config
from sim.events import SweepEvents
from sim.model.driver import run_model_point
from sim.rundir.layout import REQUESTS_FILE, SUMMARY_FILE, SUMMARY_REPEATS_FILE, rep_runs
from sim.rundir.state import verify_tables
from sim.sweep import experiment
from sim.sweep.experiment import run_experiment
from sim.sweep.hostinfo import host_base, host_info
from tests.model.test_driver import write_calibration
from tests.rundir.test_csv_cells import _ref_requests, ref_combine, ref_csv, ref_read

TABLES = (REQUESTS_FILE, SUMMARY_REPEATS_FILE, SUMMARY_FILE)


@pytest.fixture
def sweep_config(write_config, tmp_path):
    cal = write_calibration(tmp_path / "cal.json")

    def _write(**over: Any) -> Path:
        raw = {
            "mode": "model",
            "machine": {"calibration": str(cal)},
            "workload": {"requests": 24},
            "connector": {"variant": "synthetic", "options": {"hold_ms": 2.0, "free_ms": 0.5}},
            "sweep": {"connector.workers": [1, 4], "connector.options.hold_ms": [0.5, 3.0, 9.0]},
            **over,
        }
        return write_config(raw)

    return _write


def _without_started(text: str) -> str:
    """A summary_repeats.csv without its ``started_s`` column: when a run was made is
    the one thing two runs of the same points never share."""
    rows = ref_read(text)
    cols = [c for c in rows[0] if c != "started_s"] if rows else []
    return ref_csv(cols, [{c: r[c] for c in cols} for r in rows])


def _tables(out: Path) -> dict[str, bytes]:
    tables = {name: (out / name).read_bytes() for name in TABLES}
    text = tables[SUMMARY_REPEATS_FILE].decode()
    tables[SUMMARY_REPEATS_FILE] = _without_started(text).encode()
    return tables


def test_point_and_combined_tables_are_the_reference_bytes(sweep_config, tmp_path) -> None:
    path = sweep_config(repeats=2)
    cfg, points = parse_config(path)
    out = tmp_path / "out"
    res = run_experiment(cfg, points, path, out)
    assert all(r["status"] == "ok" for r in res.summary_rows)
    reps = rep_runs(out, points, cfg.repeats)
    axes = list(json.loads((out / "manifest.json").read_text())["axes"])
    for rep in reps:
        # The point run again (model mode is deterministic), written the reference way.
        again = run_model_point(rep.point, rep.repeat)
        lead = {**{a: rep.point.axes.get(a, "") for a in axes}, "repeat": rep.repeat}
        ref = _ref_requests(lead, again.records)
        assert (rep.dir / REQUESTS_FILE).read_bytes().decode() == ref
    texts = [(rep.dir / REQUESTS_FILE).read_bytes().decode() for rep in reps]
    combined = (out / REQUESTS_FILE).read_bytes().decode()
    assert combined == ref_combine([*axes, "repeat"], texts)
    assert len(ref_read(combined)) == len(reps) * cfg.workload.requests
    # summary_repeats.csv: each run's summary row with its status, the reference way.
    rows = []
    for rep in reps:
        (row,) = ref_read((rep.dir / SUMMARY_FILE).read_bytes().decode())
        lead = {c: row[c] for c in [*axes, "repeat"]}
        rows.append({**lead, "round": row["repeat"], **row, "status": "ok", "error": ""})
    cols = [c for c in rows[0] if c not in ("status", "error")] + ["status", "error"]
    written = (out / SUMMARY_REPEATS_FILE).read_bytes().decode()
    assert _without_started(written) == ref_csv(cols, rows)
    assert all(float(r["started_s"]) >= 0 for r in ref_read(written))
    assert verify_tables(out, list(TABLES)) == ""


def test_rewriting_after_every_point_ends_with_the_same_files(
    sweep_config, tmp_path, monkeypatch
) -> None:
    path = sweep_config()
    cfg, points = parse_config(path)
    run_experiment(cfg, points, path, tmp_path / "seldom")
    monkeypatch.setattr(experiment, "COMBINE_EVERY_S", 0.0)
    monkeypatch.setattr(experiment, "COMBINE_COST_FACTOR", 0.0)
    writes: list[int] = []
    real_write = experiment.Combiner.write

    def counting(self: Any) -> Any:
        writes.append(1)
        return real_write(self)

    monkeypatch.setattr(experiment.Combiner, "write", counting)
    run_experiment(cfg, points, path, tmp_path / "always")
    assert len(writes) == len(points) + 1  # the first (empty) tables, then after each point
    assert _tables(tmp_path / "always") == _tables(tmp_path / "seldom")


class _Stop(KeyboardInterrupt):
    pass


def test_ctrl_c_leaves_whole_tables_of_the_finished_points_and_resume_completes(
    sweep_config, tmp_path
) -> None:
    path = sweep_config()
    cfg, points = parse_config(path)
    whole = tmp_path / "whole"
    run_experiment(cfg, points, path, whole)

    out = tmp_path / "cut"
    done: list[Any] = []

    def stop_after_three(rep: Any, outcome: Any) -> None:
        done.append(rep)
        if len(done) == 3:
            raise _Stop()

    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, points, path, out, SweepEvents(finished=stop_after_three))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert verify_tables(out, list(TABLES)) == ""  # the tables are the ones recorded
    rows = ref_read((out / REQUESTS_FILE).read_bytes().decode())
    assert len(rows) == 3 * cfg.workload.requests
    assert len(ref_read((out / SUMMARY_FILE).read_bytes().decode())) == 3
    assert manifest["runs"]["done"] == 3

    res = run_experiment(cfg, points, path, out, resume=True)
    assert res.skipped == 3
    assert _tables(out) == _tables(whole)


def test_resume_redoes_damaged_and_unfinished_points_to_the_same_tables(
    sweep_config, tmp_path
) -> None:
    path = sweep_config()
    cfg, points = parse_config(path)
    whole = tmp_path / "whole"
    run_experiment(cfg, points, path, whole)
    out = tmp_path / "out"
    shutil.copytree(whole, out)
    reps = rep_runs(out, points, 1)
    with open(reps[1].dir / REQUESTS_FILE, "a", encoding="utf-8") as fh:
        fh.write("synthetic,4,model,0.5,0,999\n")  # a row that is not the point's
    (reps[4].dir / "status.json").unlink()
    (out / REQUESTS_FILE).write_text("garbled\n")
    redone: list[int] = []
    res = run_experiment(
        cfg,
        points,
        path,
        out,
        SweepEvents(started=lambda r, h: redone.append(r.point.index)),
        resume=True,
    )
    assert sorted(redone) == [1, 4]
    assert res.skipped == len(points) - 2
    assert _tables(out) == _tables(whole)


def test_host_record_read_once_says_what_a_fresh_one_says() -> None:
    noise = {"noise_floor_p99_ms": 0.3}
    fresh = host_info(noise)
    reused = host_info(noise, host_base())
    assert list(reused) == list(fresh)
    fresh.pop("recorded_at")
    reused.pop("recorded_at")
    assert reused == fresh


def test_model_point_files_skip_fsync_and_the_top_level_files_keep_it(
    sweep_config, tmp_path, monkeypatch
) -> None:
    import os

    from sim.rundir import outputs

    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(outputs.os, "fsync", spy)
    path = sweep_config()
    cfg, points = parse_config(path)
    out = tmp_path / "out"
    run_experiment(cfg, points, path, out)
    names = {Path(p).name.split(".")[1] for p in synced}  # ".requests.csv.XXXX.tmp"
    assert not [p for p in synced if "/points/" in p]
    assert {"requests", "summary", "summary_repeats", "manifest", "results"} <= names


def test_a_large_model_sweep_prints_no_line_per_point_run(
    sweep_config, tmp_path, monkeypatch, capsys
) -> None:
    from sim.cli import main as cli_main
    from sim.commands import run as run_command

    path = sweep_config()
    assert cli_main(["run", str(path), "--out", str(tmp_path / "few")]) == 0
    assert capsys.readouterr().err.count("✓") == 6  # 6 point runs: one line each
    monkeypatch.setattr(run_command, "_MANY", 5)
    assert cli_main(["run", str(path), "--out", str(tmp_path / "many")]) == 0
    captured = capsys.readouterr()
    assert "✓" not in captured.err
    assert "results in" in captured.out
    assert _tables(tmp_path / "few") == _tables(tmp_path / "many")
