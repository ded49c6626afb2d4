"""Model mode end to end: same outputs plus a mode column, calibration refusals, what-ifs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from sim.cli import main as cli_main
from sim.config import ConfigError, parse_config
from sim.model.driver import run_model_point
from sim.point.records import REQUEST_COLUMNS
from sim.rundir.outputs import read_csv
from sim.sweep.experiment import run_experiment


def write_calibration(path: Path, **variants: Any) -> Path:
    """A calibration file with made-up (but plausible) costs: the inputs of the model."""
    linear = {"intercept": 0.05, "per_chunk_region": 5e-4, "per_chunk": 1e-3, "per_group": 0.01}
    zero = dict.fromkeys(linear, 0.0)
    data = {
        "kind": "kvsim-calibration",
        "created": "test",
        "machine": {"cores": 2},
        "switch_interval_ms": 5.0,
        "harness": {
            "sim_cpu_per_request_ms": 0.1,
            "wake_ms": 0.05,
            "timer_late_ms": 0.06,
            "sleep_late_ms": 0.06,
            "probe_late_ms": 0.01,
            "probe_hold_ms": 0.005,
        },
        "variants": {
            "synthetic": {"overhead_ms": 0.02},
            "numpy/per_group": {
                "hold": linear,
                "free": zero,
                "range": {"chunks": [1, 64], "regions": [1, 8], "groups": [1, 2]},
            },
            **variants,
        },
        "engine": {"cached": {"build_ms": 0.03}},
    }
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def model_config(write_config, tmp_path):
    cal = write_calibration(tmp_path / "cal.json")

    def _write(overrides: dict[str, Any] | None = None) -> Path:
        base = {"mode": "model", "machine": {"calibration": str(cal)}}
        from tests.conftest import deep_merge

        return write_config(deep_merge(base, overrides or {}))

    return _write


def test_model_run_writes_the_same_files_with_a_mode_column(model_config, tmp_path) -> None:
    path = model_config({"sweep": {"connector.workers": [1, 4]}})
    cfg, points = parse_config(path)
    out = tmp_path / "out"
    res = run_experiment(cfg, points, path, out)
    assert [r["status"] for r in res.summary_rows] == ["ok", "ok"]
    rows = read_csv(out / "requests.csv")
    assert len(rows) == 2 * cfg.workload.requests
    assert {r["mode"] for r in rows} == {"model"}
    assert set(REQUEST_COLUMNS) <= set(rows[0])
    assert all(r["status"] == "ok" and float(r["latency_ms"]) > 0 for r in rows)
    summary = read_csv(out / "summary.csv")
    assert {r["mode"] for r in summary} == {"model"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["calibration"][0]["path"].endswith("cal.json")
    assert manifest["calibration"][0]["digest"].startswith("sha256:")
    assert "mode" in manifest["axes"]


def test_mode_flag_overrides_the_config(write_config, tmp_path, capsys) -> None:
    cal = write_calibration(tmp_path / "cal.json")
    path = write_config({"machine": {"calibration": str(cal)}})
    assert cli_main(["run", str(path), "--mode", "model", "-q"]) == 0
    rows = read_csv(tmp_path / "out" / "requests.csv")
    assert {r["mode"] for r in rows} == {"model"}


def test_model_mode_after_a_real_run_writes_its_own_directory(
    write_config, tmp_path, monkeypatch, capsys
) -> None:
    """The README's order: `kvsim run CONFIG`, then `kvsim run CONFIG --mode model`."""
    cal = write_calibration(tmp_path / "cal.json")
    path = write_config({"machine": {"calibration": str(cal)}, "output": {"percentiles": [50]}})
    monkeypatch.chdir(tmp_path)
    assert cli_main(["run", str(path), "-q"]) == 0
    assert cli_main(["run", str(path), "--mode", "model", "-q"]) == 0, capsys.readouterr().err
    real = read_csv(tmp_path / "results" / "tiny" / "requests.csv")
    model = read_csv(tmp_path / "results" / "tiny-model" / "requests.csv")
    assert {r["mode"] for r in real} == {"real"} and {r["mode"] for r in model} == {"model"}


def test_validate_takes_mode_as_run_does(write_config, tmp_path, capsys) -> None:
    cal = write_calibration(tmp_path / "cal.json")
    path = write_config({"machine": {"calibration": str(cal)}, "output": {"percentiles": [50]}})
    assert cli_main(["validate", str(path), "--mode", "model"]) == 0
    assert "tiny-model" in capsys.readouterr().out  # the model run's own directory
    scalar = write_config(
        {"connector": {"variant": "scalar"}, "machine": {"calibration": str(cal)}}
    )
    assert cli_main(["validate", str(scalar)]) == 0  # real mode needs no calibration
    assert cli_main(["validate", str(scalar), "--mode", "model"]) == 2
    assert "not calibrated" in capsys.readouterr().err


def test_model_run_is_deterministic(model_config) -> None:
    _cfg, points = parse_config(model_config({"connector": {"workers": 3}}))
    a = run_model_point(points[0])
    b = run_model_point(points[0])
    assert [r.as_row() for r in a.records] == [r.as_row() for r in b.records]


def test_uncalibrated_variant_is_refused_in_one_line(model_config, capsys) -> None:
    path = model_config({"connector": {"variant": "scalar"}})
    assert cli_main(["run", str(path), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "'scalar'" in err and "not calibrated" in err and "kvsim calibrate" in err


def test_geometry_outside_the_calibrated_range_is_refused(model_config, capsys) -> None:
    path = model_config({"model": {"regions": 61, "block_len": [1024]}})
    assert cli_main(["run", str(path), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "model.regions 61 is outside the calibrated range 1–8" in err


def test_missing_calibration_is_refused_with_the_command_that_writes_it(
    write_config, tmp_path, capsys
) -> None:
    missing = tmp_path / "no.json"
    path = write_config({"mode": "model", "machine": {"calibration": str(missing)}})
    assert cli_main(["run", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"write it first: `kvsim calibrate --out {missing}`" in err
    # for a point that stands for another python, the command calibrates in that one
    path = write_config(
        {
            "mode": "model",
            "machine": {"calibration": str(missing)},
            "interpreter": {"python": "freethreaded", "gil": "on"},
        }
    )
    assert cli_main(["run", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"`kvsim calibrate gil --python freethreaded --out {missing}`" in err
    # a path with a space is quoted, so that the command can be pasted as it stands
    spaced = tmp_path / "my cal.json"
    path = write_config({"mode": "model", "machine": {"calibration": str(spaced)}})
    assert cli_main(["run", str(path), "-q"]) == 2
    assert f"`kvsim calibrate --out '{spaced}'`" in capsys.readouterr().err


def test_the_default_calibration_missing_asks_for_a_bare_calibrate(
    write_config, tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no results/calibration.json here
    path = write_config({"mode": "model"})
    assert cli_main(["run", str(path), "-q"]) == 2
    assert "(no such file); run `kvsim calibrate` first" in capsys.readouterr().err


def test_real_mode_refuses_what_only_the_model_can_run(write_config) -> None:
    with pytest.raises(ConfigError, match=r"gil\.kind: none needs mode: model"):
        parse_config(write_config({"gil": {"kind": "none"}}))
    with pytest.raises(ConfigError, match=r"machine\.cores needs mode: model"):
        parse_config(write_config({"machine": {"cores": 64}}))


def test_what_if_32_workers_with_and_without_gil_on_64_cores(model_config) -> None:
    path = model_config(
        {
            "connector": {"variant": "synthetic", "workers": 32, "options": {"hold_ms": 20.0}},
            "workload": {"requests": 200, "arrival": {"kind": "poisson", "rate_rps": 400}},
            "machine": {"cores": 64},
            "sweep": {"gil.kind": ["cpython", "none"]},
        }
    )
    _cfg, points = parse_config(path)
    by_kind = {p.config.gil.kind: run_model_point(p).summary for p in points}
    gil, free = by_kind["cpython"], by_kind["none"]
    assert gil["ok"] == free["ok"] == 200
    # 200 requests of 20 ms at 400/s need 4 cores' worth of Python: one GIL cannot keep
    # up (latency grows), 64 free-threaded cores can (latency stays near the hold).
    assert free["latency_p50_ms"] < 2 * 20.0 < gil["latency_p50_ms"]
    # without a GIL its columns are empty, as a real point's with the GIL off, and the
    # thread's CPU and its wait for a core take their place (docs/columns.md §GIL off)
    assert math.isnan(free["gil_wait_mean_ms"]) and math.isnan(free["gil_hold_mean_ms"])
    assert (gil["gil_enabled"], free["gil_enabled"]) == (1, 0) and "GIL off" in free["gil_note"]
    assert gil["thread_cpu_mean_ms"] == pytest.approx(free["thread_cpu_mean_ms"])
    assert gil["thread_cpu_mean_ms"] == pytest.approx(gil["gil_hold_mean_ms"])  # no free CPU
    assert free["core_wait_mean_ms"] == pytest.approx(0.0, abs=1e-9)  # 64 cores, 32 threads
    assert math.isnan(gil["core_wait_mean_ms"])  # in the GIL wait with the GIL on


def test_validate_checks_the_calibration_of_model_points(model_config, capsys) -> None:
    path = model_config({"connector": {"variant": "scalar"}})
    assert cli_main(["validate", str(path)]) == 2
    assert "not calibrated" in capsys.readouterr().err
    assert cli_main(["validate", str(model_config())]) == 0


@pytest.mark.parametrize(
    "arrival",
    [{"kind": "constant", "rate_rps": 100}, {"kind": "closed", "clients": 2, "think_ms": 1.0}],
)
def test_a_request_ends_when_its_transfer_does_as_in_real_mode(
    model_config, monkeypatch, arrival
) -> None:
    """Not when the simulated harness notes it (real mode's transfer ends are quiet
    timers); a closed loop's client is ready again once the harness has noted it."""
    from sim.model import driver

    picked: dict[int, float] = {}
    cpu_done = driver._Request._cpu_done

    def spy(self, job):
        picked[self.req.request_id] = self.p.loop.now  # the transfer starts now
        cpu_done(self, job)

    monkeypatch.setattr(driver._Request, "_cpu_done", spy)
    path = model_config(
        {
            "workload": {"requests": 40, "arrival": arrival},
            "connector": {"variant": "synthetic", "options": {"hold_ms": 15.0}},
            "store": {"latency_ms": 2.0, "bandwidth_gb_per_s": 1000, "concurrency": 64},
        }
    )
    _cfg, points = parse_config(path)
    recs = run_model_point(points[0]).records
    assert len(recs) == 40 and all(r.status == "ok" for r in recs)
    for r in recs:
        assert r.done_s - picked[r.request_id] == pytest.approx(2e-3 + r.bytes / 1e12, abs=1e-9)
    if arrival["kind"] == "closed":  # each arrival follows an end by the think time or more
        ends = sorted(r.done_s for r in recs)
        later = sorted(r.arrival_s for r in recs)[2:]  # the two clients' first are at 0
        assert all(a >= e + 1e-3 - 1e-12 for a, e in zip(later, ends, strict=False))


def test_cpu_scale_scales_measured_costs_and_not_what_the_config_asks_for(model_config) -> None:
    """machine.cpu_scale: a host whose threads run faster or slower. A measured hold
    (numpy's fit) scales; synthetic's hold_ms is CPU time asked for, and only its
    measured overhead scales."""

    def hold(variant: str, scale: float, options: dict[str, Any] | None = None) -> float:
        over = {"machine": {"cpu_scale": scale}, "connector": {"variant": variant}}
        if options:
            over["connector"]["options"] = options
        _cfg, points = parse_config(model_config(over))
        return run_model_point(points[0]).summary["gil_hold_mean_ms"]

    assert hold("numpy", 2.0) == pytest.approx(2 * hold("numpy", 1.0), rel=1e-9)
    one, two = hold("synthetic", 1.0, {"hold_ms": 3.0}), hold("synthetic", 2.0, {"hold_ms": 3.0})
    assert two - one == pytest.approx(0.02, rel=1e-6)  # the calibration's 0.02 ms overhead


def test_real_mode_refuses_a_cpu_scale(write_config) -> None:
    with pytest.raises(ConfigError, match=r"machine\.cpu_scale needs mode: model"):
        parse_config(write_config({"machine": {"cpu_scale": 0.5}}))


def _trace_model_config(model_config, tmp_path: Path, cal_chunks: list[int]) -> Path:
    """A trace whose replayed requests load 4 and 8 chunks (128-token chunks, 512-token
    blocks; the first finds nothing stored and is skipped)."""
    from sim.workload.trace import write_trace

    rows = [
        {"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [0, 1]},
        {"timestamp": 10, "input_length": 600, "output_length": 1, "hash_ids": [0, 1]},
        {"timestamp": 20, "input_length": 1100, "output_length": 1, "hash_ids": [0, 1, 2]},
        {"timestamp": 30, "input_length": 1100, "output_length": 1, "hash_ids": [0, 1, 2]},
    ]
    write_trace(tmp_path / "t.jsonl", rows)
    linear = {"intercept": 0.05, "per_chunk_region": 5e-4, "per_chunk": 1e-3, "per_group": 0.01}
    cal = write_calibration(
        tmp_path / "narrow.json",
        **{
            "numpy/per_group": {
                "hold": linear,
                "free": dict.fromkeys(linear, 0.0),
                "range": {"chunks": cal_chunks, "regions": [1, 8], "groups": [1, 2]},
            }
        },
    )
    return model_config(
        {
            "machine": {"calibration": str(cal)},
            "model": {"block_size": 128, "block_len": [1024]},
            "workload": {
                "requests": 40,
                "tokens": 131072,
                "arrival": {"kind": "trace", "path": str(tmp_path / "t.jsonl")},
            },
            "sweep": {"connector.workers": [1, 2]},
        }
    )


def test_a_trace_outside_the_calibration_is_refused_by_validate_naming_the_point(
    model_config, tmp_path, capsys
) -> None:
    path = _trace_model_config(model_config, tmp_path, [8, 64])
    for command in (["validate", str(path)], ["run", str(path), "-q"]):
        assert cli_main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1
        assert "point 0 (variant=numpy,workers=1,mode=model): " in err
        assert "chunks per group 4–8 is outside the calibrated range 8–64" in err


def test_a_calibration_covering_one_chunk_runs_a_traces_short_loads(model_config, tmp_path) -> None:
    path = _trace_model_config(model_config, tmp_path, [1, 64])
    _cfg, points = parse_config(path)
    res = run_model_point(points[0])
    assert [r.chunks for r in res.records] == [4, 8, 8]
    assert all(r.status == "ok" for r in res.records)


@pytest.mark.parametrize("workers", [1, 3])
def test_requests_handed_over_ahead_start_at_their_time_as_in_real_mode(
    model_config, monkeypatch, workers: int
) -> None:
    """An open loop over the modelled store hands requests over up to a lead ahead, in
    batches (sim.point.arrivals); a load thread takes each up at its planned time, not
    before, and the record says it was not handed over late."""
    from sim.model import driver
    from sim.point.arrivals import HAND_OVER_LEAD_S

    handed: dict[int, float] = {}
    init = driver._Request.__init__

    def spy(self, p, req, arrival_s, then):
        handed[req.request_id] = p.loop.now - p.origin  # run time of the hand-over
        init(self, p, req, arrival_s, then)

    monkeypatch.setattr(driver._Request, "__init__", spy)
    path = model_config(
        {
            "workload": {"requests": 200, "arrival": {"kind": "poisson", "rate_rps": 400}},
            "connector": {"variant": "synthetic", "workers": workers, "options": {"hold_ms": 1.0}},
        }
    )
    _cfg, points = parse_config(path)
    recs = run_model_point(points[0]).records
    assert len(recs) == 200
    ahead = [r.arrival_s - handed[r.request_id] for r in recs]
    assert max(ahead) <= HAND_OVER_LEAD_S + 1e-9
    assert sum(a > 0 for a in ahead) >= len(recs) // 2  # most were handed over ahead
    for r in recs:
        assert r.start_s >= r.arrival_s  # never started before its time
        assert r.injected_s >= r.arrival_s - 1e-12
        assert r.inject_lag_ms == pytest.approx((r.injected_s - r.arrival_s) * 1e3, abs=1e-9)
