"""Mechanism validation's replay (sim.model.replay): measured holds through the model.

A model run's own records replayed through the model give that run back, request for
request (the replay changes what the hold is, not how the queue, GIL and store work);
holds that differ per request are the ones the replay's requests hold; the targets
are the stated ones.
"""

from __future__ import annotations

import math

import pytest

from sim import columns
from sim.config import parse_config
from sim.model.calibration import load_calibration
from sim.model.driver import run_model_point
from sim.model.post_lag import post_lag_s
from sim.model.replay import (
    MECHANISM_TARGETS,
    RealRep,
    Target,
    figures,
    job_gap_s,
    measured,
    replay_point,
)
from tests.model.test_driver import write_calibration


def _rows(records) -> list[dict[str, str]]:
    return [{k: str(v) for k, v in r.as_row().items()} for r in records]


def _synthetic_point(write_config, tmp_path, requests, rate, workers, hold_ms, **extra):
    """A model point of synthetic requests on a made-up calibration."""
    cal = write_calibration(tmp_path / "cal.json")
    path = write_config(
        {
            "mode": "model",
            "machine": {"calibration": str(cal)},
            "workload": {"requests": requests, "arrival": {"kind": "poisson", "rate_rps": rate}},
            "connector": {
                "variant": "synthetic",
                "workers": workers,
                "options": {"hold_ms": hold_ms},
            },
            **extra,
        }
    )
    return parse_config(path)[1][0]


@pytest.fixture
def point(write_config, tmp_path):
    """A model point of synthetic requests (4 ms holds, two load threads, GIL ~60 % busy)."""
    return _synthetic_point(write_config, tmp_path, 60, 150, 2, 4.0)


def test_a_model_run_replayed_is_itself(point) -> None:
    """A synthetic point's holds are its config's, drawn from nothing: the replay of its
    own records makes the very same draws, so every figure comes back to the digit."""
    run = run_model_point(point, 1)
    got = replay_point(point, [RealRep(1, _rows(run.records))], draws=1)
    assert got.requests == 60
    for metric, value in figures(_rows(run.records)).items():
        assert got.model[metric] == pytest.approx(value, rel=1e-9), metric
        assert got.real[metric] == pytest.approx(value, rel=1e-9), metric
    assert got.meets and all(got.within.values())


def test_each_request_holds_what_it_held_in_the_run_replayed(point, monkeypatch) -> None:
    from sim.model import replay

    rows = _rows(run_model_point(point).records)
    for i, row in enumerate(rows):
        row["gil_hold_ms"] = str(1.0 + (i % 7))  # 1-7 ms, where the config says 4
    seen: list = []
    real_run = replay.run_model_point
    monkeypatch.setattr(
        replay, "run_model_point", lambda *a, **k: seen.append(real_run(*a, **k)) or seen[-1]
    )
    got = replay_point(point, [RealRep(0, rows)], draws=1)
    (result,) = seen
    assert {r.request_id: r.gil_hold_ms for r in result.records} == pytest.approx(
        {int(row["request_id"]): float(row["gil_hold_ms"]) for row in rows}
    )
    assert got.real["latency_mean_ms"] != got.model["latency_mean_ms"]  # holds changed it


def test_repeats_are_pooled_per_point(point) -> None:
    reps = [RealRep(k, _rows(run_model_point(point, k).records)) for k in range(3)]
    got = replay_point(point, reps, draws=1)
    assert got.requests == 180
    assert got.error["latency_p50_ms"] == pytest.approx(0.0, abs=1e-9)


def test_a_draw_stream_keeps_the_plan_and_draws_other_choices(point) -> None:
    """draw_stream k > 0: the same arrivals, tokens and holds, other random choices (who
    gets the GIL): at a contended point some request's latency moves."""
    first, other = (run_model_point(point, 0, draw_stream=k).records for k in (0, 3))
    by_id = {r.request_id: r for r in other}
    assert sorted(by_id) == sorted(r.request_id for r in first)
    assert all(by_id[r.request_id].arrival_s == r.arrival_s for r in first)
    assert all(by_id[r.request_id].tokens == r.tokens for r in first)
    assert any(by_id[r.request_id].latency_ms != r.latency_ms for r in first)
    again = run_model_point(point, 0, draw_stream=3).records
    assert [r.latency_ms for r in again] == [r.latency_ms for r in other]  # reproducible


def test_the_model_figure_is_the_mean_of_its_draws_each_at_the_real_count(
    point, monkeypatch
) -> None:
    """Each draw's figures are taken over the real side's requests (a p99 of 60, not of
    60 × draws), then averaged; the range is the draws' lowest and highest."""
    from sim.model import replay

    rows = _rows(run_model_point(point).records)
    seen: dict[int, list] = {}
    real_run = replay.run_model_point

    def spy(*a, draw_stream: int = 0, **k):
        seen[draw_stream] = list(real_run(*a, draw_stream=draw_stream, **k).records)
        return real_run(*a, draw_stream=draw_stream, **k)

    monkeypatch.setattr(replay, "run_model_point", spy)
    got = replay_point(point, [RealRep(0, rows)], draws=3)
    assert sorted(seen) == [0, 1, 2] and got.draws == 3 and got.requests == 60
    each = [
        figures(
            {
                "status": r.status,
                "latency_ms": r.latency_ms,
                "queue_ms": r.queue_ms,
                "gil_wait_ms": r.gil_wait_ms,
            }
            for r in seen[k]
        )
        for k in range(3)
    ]
    assert all(len(seen[k]) == 60 for k in range(3))
    for metric, value in got.model.items():
        values = [e[metric] for e in each]
        assert value == pytest.approx(sum(values) / 3, rel=1e-9), metric
        assert got.model_range[metric] == pytest.approx((min(values), max(values))), metric
    assert got.model_range["gil_wait_mean_ms"][0] < got.model_range["gil_wait_mean_ms"][1]
    with pytest.raises(ValueError, match="draws must be at least 1"):
        replay_point(point, [RealRep(0, rows)], draws=0)


def test_the_mechanism_targets_are_the_stated_ones() -> None:
    t = MECHANISM_TARGETS
    assert t["latency_mean_ms"] == Target(0.05)
    assert t["latency_p50_ms"] == Target(0.05)
    assert t["latency_p99_ms"] == Target(0.10)
    assert t["gil_wait_mean_ms"] == Target(0.15, 0.1)
    assert t["latency_p50_ms"].met(100.0, 104.9) and not t["latency_p50_ms"].met(100.0, 105.2)
    assert t["gil_wait_mean_ms"].met(0.01, 0.05)  # 0.04 ms apart: within 0.1 ms
    assert t["gil_wait_mean_ms"].met(2.0, 2.29) and not t["gil_wait_mean_ms"].met(2.0, 2.31)
    assert not t["latency_mean_ms"].met(math.nan, 1.0)


def test_figures_count_latency_over_ok_requests_only() -> None:
    rows = [
        {"status": "ok", "latency_ms": "10", "queue_ms": "1", "gil_wait_ms": "0.5"},
        {"status": "failed", "latency_ms": "1000", "queue_ms": "3", "gil_wait_ms": "1.5"},
    ]
    got = figures(rows)
    assert got["latency_mean_ms"] == 10.0 and got["latency_p99_ms"] == 10.0
    assert got["queue_mean_ms"] == 2.0 and got["gil_wait_mean_ms"] == 1.0


def _job(thread: str, start: float, end: float, injected: float) -> dict[str, str]:
    return {
        "thread": thread,
        "start_s": str(start),
        "cpu_done_s": str(end),
        "injected_s": str(injected),
    }


def test_the_job_gap_is_the_median_gap_of_a_thread_that_went_on_without_waiting() -> None:
    """A thread's next job already queued when one ended: the gap between them counts; a
    job handed over after the end (the thread waited for work) does not."""
    rows = [
        _job("a", 0.000, 0.005, 0.000),
        _job("a", 0.00503, 0.010, 0.001),  # 30 µs
        _job("a", 0.03, 0.035, 0.02),  # handed over after 0.010: the thread waited
        _job("b", 0.001, 0.006, 0.001),
        _job("b", 0.00605, 0.011, 0.002),  # 50 µs
        _job("b", 0.01109, 0.016, 0.003),  # 90 µs
    ]
    assert job_gap_s(rows) == pytest.approx(50e-6)
    assert job_gap_s(rows[:1] + rows[2:3]) is None


def test_a_model_run_replayed_measures_no_job_gap(point) -> None:
    """The model's load thread goes from one job to the next without GIL-held work in
    between unless told to (ModelWorkers.job_gap_s), so its own records measure none."""
    gap = job_gap_s(_rows(run_model_point(point).records))
    assert gap == pytest.approx(0.0, abs=1e-12)


def _harness_us(point) -> float:
    """The calibration's simulation-thread CPU per request, in µs (its own figure)."""
    cal = load_calibration(point.config.machine.calibration)
    return float(cal.harness["sim_cpu_per_request_ms"]) * 1e3


def test_the_simulation_threads_gil_time_is_read_from_the_runs_summary(point) -> None:
    rows = _rows(run_model_point(point).records)
    us = 3 * _harness_us(point)
    summary = {columns.HARNESS_US_PER_REQUEST.name: str(us)}
    assert measured(RealRep(0, rows, summary=summary)).harness_s == pytest.approx(us / 1e6)
    assert measured(RealRep(0, rows)).harness_s is None  # no summary: the calibration's


def test_a_replayed_simulation_thread_costs_what_the_run_measured(point) -> None:
    """Issue 40: the simulation thread's GIL time per request is a run's own (36 µs a
    request at 800 req/s, 260 at 15 req/s, against the calibration's 117): the replay
    spends the run's, so a run whose thread cost more injects and serves later; at the
    calibration's own figure it is the model run itself."""
    rows = _rows(run_model_point(point).records)
    key = columns.HARNESS_US_PER_REQUEST.name

    def replayed(us: float) -> dict[str, float]:
        got = replay_point(point, [RealRep(0, rows, summary={key: str(us)})], draws=1)
        return got.model

    same, dearer = replayed(_harness_us(point)), replayed(4 * _harness_us(point))
    assert same == pytest.approx(figures(rows), rel=1e-9, nan_ok=True)
    assert dearer["queue_mean_ms"] > same["queue_mean_ms"]
    assert dearer[columns.LATENCY_MEAN_MS.name] > same[columns.LATENCY_MEAN_MS.name]


def test_the_engine_steps_per_request_are_counted_from_the_load_phase(point) -> None:
    rows = _rows(run_model_point(point).records)  # 60 requests
    steps = [{"phase": "alone", "build_us": "30"}] * 7 + [{"phase": "load"}] * 90
    assert measured(RealRep(0, rows, steps=steps)).steps_per_request == pytest.approx(1.5)
    assert measured(RealRep(0, rows)).steps_per_request == 0.0  # no engine


def test_a_replayed_engine_point_keeps_the_simulation_threads_cpu(write_config, tmp_path) -> None:
    """Issue 40: with the engine on, a run's simulation-thread figure holds its work for
    every engine step as well. The replay spends it over the requests and the steps, so
    the replayed thread is as busy as the run's; charged per request on top of the
    model's own per-step items, it was 4-6 times busier at engine_interference's points."""
    engine = {"enabled": True, "baseline_steps": 5, "forward_ms": 2.0}
    point = _synthetic_point(write_config, tmp_path, 40, 40, 1, 2.0, engine=engine)
    run = run_model_point(point)
    busy = columns.GIL_BUSY_HARNESS.name
    n, elapsed = len(run.records), run.summary[columns.ELAPSED_S.name]
    per_request_us = run.summary[busy] * elapsed / n * 1e6  # steps' items included
    steps = [{"phase": "load"}] * sum(1 for r in run.tables["steps"] if r["phase"] == "load")
    assert len(steps) > 5 * n  # the steps' share is most of the thread's work
    summary = {columns.HARNESS_US_PER_REQUEST.name: str(per_request_us)}
    costs = measured(RealRep(0, _rows(run.records), steps=steps, summary=summary))
    again = run_model_point(point, measured=costs)
    assert again.summary[busy] == pytest.approx(run.summary[busy], rel=0.1)


def test_the_probes_busy_hold_is_read_from_the_runs_summary(point) -> None:
    rows = _rows(run_model_point(point).records)
    summary = {columns.PROBE_HOLD_BUSY_US.name: "70.5"}
    assert measured(RealRep(0, rows, summary=summary)).probe_hold_s == pytest.approx(70.5e-6)
    assert measured(RealRep(0, rows)).probe_hold_s is None  # no summary: the calibration's
    nan = {columns.PROBE_HOLD_BUSY_US.name: "nan"}  # no wake-up found the GIL busy
    assert measured(RealRep(0, rows, summary=nan)).probe_hold_s is None


def test_a_replayed_probe_holds_what_the_run_measured(point) -> None:
    """The probe's hold at a wake-up that found the GIL busy is two to three times its
    hold on a free GIL (docs/model-mode.md, "The probe's hold"): the replay takes the
    run's. At the calibration's own figure the replay is the model run itself; a longer
    one keeps the load threads waiting longer behind the probe."""
    rows = _rows(run_model_point(point).records)
    cal = load_calibration(point.config.machine.calibration)
    own_us = float(cal.harness.get("probe_hold_busy_ms", cal.harness["probe_hold_ms"])) * 1e3
    key = columns.PROBE_HOLD_BUSY_US.name

    def replayed(us: float) -> dict[str, float]:
        return replay_point(point, [RealRep(0, rows, summary={key: str(us)})], draws=1).model

    same, dearer = replayed(own_us), replayed(own_us + 400.0)
    assert same == pytest.approx(figures(rows), rel=1e-9, nan_ok=True)
    wait = columns.GIL_WAIT_MEAN_MS.name
    assert dearer[wait] > same[wait]


def _transfer(start: float, end: float, nbytes: int = 100, **extra: str) -> dict[str, str]:
    row = {"status": "ok", "cpu_done_s": str(start), "done_s": str(end), "bytes": str(nbytes)}
    row.update({"store_wait_ms": "0", "attempts": "1", **extra})
    return row


def test_the_post_lag_is_the_median_excess_of_the_transfers_that_ran_alone() -> None:
    """A transfer's time beyond its time alone on the link, over those alone: one that
    overlaps another, waited for a slot or was retried says nothing about the post."""
    alone = 0.5e-3
    rows = [
        _transfer(0.0, alone + 30e-6),
        _transfer(0.01, 0.01 + alone + 40e-6),
        _transfer(0.02, 0.02 + alone + 50e-6),
        _transfer(0.03, 0.03 + 2 * alone),  # overlaps the next: shared the link
        _transfer(0.03 + alone, 0.03 + 3 * alone),
        _transfer(0.05, 0.05 + 4 * alone, store_wait_ms="1.0"),
        _transfer(0.06, 0.06 + 4 * alone, attempts="2"),
    ]
    assert post_lag_s(rows, lambda nbytes: alone) == pytest.approx(40e-6)
    assert post_lag_s(rows[3:], lambda nbytes: alone) is None


def test_a_replayed_transfer_starts_at_the_answers_post(point) -> None:
    """Issue 40: real transfers took 15-45 µs longer than the link model gives them, the
    load thread's work from its stamped end to the post; the replay starts the transfer
    after that much GIL-held work, so a run whose transfers took longer by a lag comes
    back with the lag in transfer_ms."""
    rows = _rows(run_model_point(point).records)
    lag_s = point.config.store.latency_ms / 1e3 / 10
    later = [{**r, "done_s": str(float(r["done_s"]) + lag_s)} for r in rows]
    seen: list = []
    from sim.model import replay

    real_run = replay.run_model_point
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            replay, "run_model_point", lambda *a, **k: seen.append(real_run(*a, **k)) or seen[-1]
        )
        replay_point(point, [RealRep(0, rows)], draws=1)
        replay_point(point, [RealRep(0, later)], draws=1)
    before, after = ([r.transfer_ms for r in res.records] for res in seen)
    assert sorted(after)[len(after) // 2] - sorted(before)[len(before) // 2] == pytest.approx(
        lag_s * 1e3, rel=0.05
    )


def test_a_gil_off_replay_adds_no_crowd_to_the_thread_cpu_it_replays(
    write_config, tmp_path
) -> None:
    """With the GIL off the replay runs each request's thread CPU from the real run, which
    already holds what the load threads running beside it cost it: the calibration's
    parallel slowdown (here 1.5 at two threads at once) is not applied again. Two requests
    that arrive together on two threads and two cores each take their 40 ms, as measured;
    the same point run from the calibration takes the crowd's 60."""
    slowdown = {"2": {"slowdown": 1.5, "ratio": 1.5, "overlap": 1.0}}
    entry = {"overhead_ms": 0.0, "parallel_slowdown": slowdown}
    cal = write_calibration(tmp_path / "cal.json", synthetic=entry)
    path = write_config(
        {
            "mode": "model",
            "gil": {"kind": "none"},
            "machine": {"calibration": str(cal), "cores": 2, "background_load": 0.0},
            "workload": {"requests": 2, "arrival": {"kind": "closed", "clients": 2}},
            "connector": {"variant": "synthetic", "workers": 2, "options": {"hold_ms": 40.0}},
        }
    )
    point = parse_config(path)[1][0]
    modelled = run_model_point(point)
    cpu = sorted(r.stage_wall_ms for r in modelled.records)
    assert cpu == pytest.approx([60.0, 60.0], rel=0.02)  # the crowd, from the calibration
    rows = _rows(modelled.records)
    for row in rows:
        row[columns.THREAD_CPU_MS.name] = "40.0"  # what each took in the real run
    got = replay_point(point, [RealRep(0, rows)])
    assert got.model[columns.LATENCY_MEAN_MS.name] < 0.75 * got.real[columns.LATENCY_MEAN_MS.name]
    replayed = run_model_point(point, measured=measured(RealRep(0, rows)))
    assert sorted(r.stage_wall_ms for r in replayed.records) == pytest.approx(
        [40.0, 40.0], rel=0.02
    )
