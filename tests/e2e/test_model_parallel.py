"""Model-mode points on every core: the same run directory as one after the other, and
Ctrl-C leaves it consistent and resumable (``sim.sweep.executors.parallel``)."""

from __future__ import annotations

import json
import multiprocessing
from typing import Any

import pytest

from sim.config import Point, parse_config
from sim.events import SweepEvents
from sim.rundir.layout import REQUESTS_FILE, RepRun, in_run_order, read_status, rep_runs
from sim.rundir.state import verify_tables
from sim.sweep.executors import parallel
from sim.sweep.experiment import run_experiment
from tests.e2e import test_model_sweep_outputs as _outputs
from tests.e2e.test_model_sweep_outputs import TABLES, _tables

sweep_config = _outputs.sweep_config  # the same small model sweep


@pytest.fixture
def two_workers(monkeypatch):
    monkeypatch.setattr(parallel, "MIN_PARALLEL_REQUESTS", 0)
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)


def _serial(monkeypatch) -> None:
    monkeypatch.setattr(parallel, "MIN_PARALLEL_REQUESTS", 10**12)


def test_parallel_points_give_the_serial_run_directory(
    sweep_config, tmp_path, monkeypatch, two_workers
) -> None:
    path = sweep_config(repeats=2)
    cfg, points = parse_config(path)
    order: list[tuple[int, int]] = []
    run_experiment(
        cfg,
        points,
        path,
        tmp_path / "par",
        SweepEvents(finished=lambda r, o: order.append((r.point.index, r.repeat))),
    )
    manifest = json.loads((tmp_path / "par" / "manifest.json").read_text())
    assert "in 2 worker processes" in " ".join(manifest["sessions"][-1]["notes"])
    _serial(monkeypatch)
    run_experiment(cfg, points, path, tmp_path / "ser")
    planned = in_run_order(rep_runs(tmp_path / "par", points, 2), cfg.sweep_order, cfg.seed)
    assert order == [(r.point.index, r.repeat) for r in planned]  # reported in planned order
    assert _tables(tmp_path / "par") == _tables(tmp_path / "ser")
    for par, ser in zip(
        rep_runs(tmp_path / "par", points, 2), rep_runs(tmp_path / "ser", points, 2), strict=True
    ):
        assert (par.dir / REQUESTS_FILE).read_bytes() == (ser.dir / REQUESTS_FILE).read_bytes()
        assert read_status(par.dir)["files"] == read_status(ser.dir)["files"]
    assert not multiprocessing.active_children()


class _Stop(KeyboardInterrupt):
    pass


def test_ctrl_c_stops_the_workers_and_resume_completes(
    sweep_config, tmp_path, monkeypatch, two_workers
) -> None:
    path = sweep_config(workload={"requests": 60})
    cfg, points = parse_config(path)
    out = tmp_path / "cut"
    seen: list[Any] = []

    def stop_after_two(rep: Any, outcome: Any) -> None:
        seen.append(rep)
        if len(seen) == 2:
            raise _Stop()

    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, points, path, out, SweepEvents(finished=stop_after_two))
    assert not multiprocessing.active_children()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert verify_tables(out, list(TABLES)) == ""
    done = manifest["runs"]["done"]
    assert done >= 2
    for rep in rep_runs(out, points, 1):
        if rep.dir.is_dir():  # begun: it ended whole, or says it was interrupted
            status = read_status(rep.dir)
            assert status is not None and status["status"] in ("ok", "interrupted")
    rows = (out / REQUESTS_FILE).read_bytes().count(b"\n") - 1
    assert rows == done * cfg.workload.requests

    _serial(monkeypatch)
    whole = tmp_path / "whole"
    run_experiment(cfg, points, path, whole)
    res = run_experiment(cfg, points, path, out, resume=True)
    assert res.skipped == done
    assert _tables(out) == _tables(whole)


def test_few_or_real_points_stay_serial(sweep_config, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    path = sweep_config()
    _, points = parse_config(path)
    reps = rep_runs(tmp_path, points, 4)  # 24 requests each
    planned = 24 * len(reps)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_REQUESTS", planned)
    assert parallel.model_workers(reps) == 2
    monkeypatch.setattr(parallel, "MIN_PARALLEL_REQUESTS", planned + 1)
    assert parallel.model_workers(reps) == 1  # too few requests to pay for the workers
    # Requests in all decide, not how many runs hold them (issue 42: the process shape,
    # and the run's memory, must not change with the request count past the floor).
    monkeypatch.setattr(parallel, "MIN_PARALLEL_REQUESTS", 48)
    assert parallel.model_workers(reps[:2]) == 2
    assert parallel.model_workers(reps[:1]) == 1  # one run: nothing to share
    monkeypatch.setattr(parallel, "MIN_PARALLEL_REQUESTS", 0)
    real = points[0].config.model_copy(update={"mode": "real"})
    real_rep = RepRun(Point(0, points[0].axes, real), 0, reps[0].dir)
    assert parallel.model_workers([*reps, real_rep]) == 1
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert parallel.model_workers(reps) == 1
