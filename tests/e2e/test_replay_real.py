"""A small real run replayed through the model (sim.api.replay): checks that hold beside a
CPU hog.

One load thread, synthetic holds, a free harness and an idle machine in the model: each
request then waits in a FIFO single-server queue whose service is its real hold's CPU
time plus two figures the replay takes as medians over the run (the thread's time
between jobs and from a job's end to its answer's post, sim.model.replay.job_gap_s and
sim.model.post_lag: a request's own are each 0 or more). Nothing else the real machine
adds (its harness, wake-ups, a core taken by another process) can make a request
earlier (Lindley's recursion is monotone in every service and arrival delay), so a
request's replay is later than its real self by at most what those medians add to it
and to the requests ahead of it in its busy period: the bound below, from the real
run's own rows. No absolute time is asserted.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sim.api.replay import repeat_run, replay_run
from sim.cli import main as cli_main
from sim.config import parse_config
from sim.errors import RunDirError
from sim.model.calibration import load_calibration
from sim.model.loop import Loop
from sim.model.post_lag import post_lag_s
from sim.model.replay import job_gap_s
from sim.rundir.outputs import read_csv
from sim.store.model import StoreModel
from tests.model.test_queueing import _free_harness_calibration


def _replayed_medians_bound_ms(rows: list[dict[str, str]], axes: object, path: Path) -> float:
    """The most the replay's medians can make a request later than it was: each request's
    service gains at most ``delta`` (the two medians; its own figures are 0 or more), and
    a request's lateness carries to the next one unless the real server was idle in
    between longer than it (e_k <= delta + max(0, e_(k-1) - idle_k)); the largest e_k,
    which bounds every latency, queue and percentile difference alike."""
    _, points = parse_config(path)
    store = points[0].config.store
    alone = StoreModel(Loop(), store).transfer_time_s
    delta = (job_gap_s(rows) or 0.0) + (post_lag_s(rows, alone) or 0.0)
    worst = late = 0.0
    prev_end = -math.inf
    for row in sorted(rows, key=lambda r: float(r["arrival_s"])):
        idle = max(0.0, float(row["arrival_s"]) - prev_end)
        late = delta + max(0.0, late - idle)
        worst = max(worst, late)
        prev_end = float(row["cpu_done_s"])
    return worst * 1e3


def test_a_real_runs_replay_is_never_slower_than_it(write_config, tmp_path) -> None:
    out = tmp_path / "run"
    path = write_config(
        {
            "workload": {"requests": 40, "arrival": {"kind": "poisson", "rate_rps": 40}},
            "connector": {"variant": "synthetic", "workers": 1, "options": {"hold_ms": 3.0}},
            "gil": {"probe": False},
            "sweep": {"workload.arrival.rate_rps": [40, 80]},
        }
    )
    assert cli_main(["run", str(path), "--out", str(out), "-q"]) == 0
    cal = load_calibration(_free_harness_calibration(tmp_path / "cal.json"))
    points = replay_run(out, calibration=cal, background=0.0)
    assert [p.axes["rate_rps"] for p in points] == [40, 80]
    rows = read_csv(out / "requests.csv")
    for p in points:
        assert p.requests == 40
        mine = [r for r in rows if r["rate_rps"] == str(p.axes["rate_rps"])]
        assert p.real["latency_mean_ms"] == pytest.approx(
            sum(float(r["latency_ms"]) for r in mine) / 40
        )
        slack_ms = _replayed_medians_bound_ms(mine, points[0].axes, path)
        for metric in ("latency_mean_ms", "latency_p50_ms", "latency_p99_ms", "queue_mean_ms"):
            assert math.isfinite(p.model[metric])
            assert p.model[metric] <= p.real[metric] + slack_ms + 1e-6, (p.label, metric)
        # the replayed holds are the real ones: the model's latency is at least their mean
        holds = [float(r["gil_hold_ms"]) for r in mine]
        assert p.model["latency_mean_ms"] >= sum(holds) / len(holds)
        # One load thread: the only GIL it can wait for is the free harness's, when a batch
        # of hand-overs (sim.point.arrivals, one every 10 ms) waits out a switch interval
        # behind a chain of jobs the thread runs without letting go: a hand-off, now and
        # then, a small part of a hold.
        assert 0.0 <= p.model["gil_wait_mean_ms"] <= 0.01 * sum(holds) / len(holds)
    # the real side against itself (--aa): a run against its own copy repeats to the digit
    same = repeat_run(points, out)
    assert [p.slug for p in same] == [p.slug for p in points]
    for p in same:
        assert p.draws == 0 and p.requests == 40 and p.meets
        assert p.model == pytest.approx(p.real, nan_ok=True)


def test_a_directory_without_a_real_point_is_refused_in_one_line(tmp_path) -> None:
    with pytest.raises(RunDirError, match="no points/ directory"):
        replay_run(tmp_path)
    (tmp_path / "points").mkdir()
    with pytest.raises(RunDirError, match="no finished real point run to replay"):
        replay_run(tmp_path)
    with pytest.raises(RunDirError, match="no finished real point run to replay"):
        repeat_run([], tmp_path)
