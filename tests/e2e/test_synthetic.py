"""The synthetic and noop variants: known GIL holds, seeded failures, the noise floor."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from connectors import registry
from connectors.address_noop import NoopVariant
from connectors.address_synthetic import (
    SyntheticFailure,
    SyntheticOptions,
    SyntheticVariant,
    spin_cpu,
)
from connectors.base import LoadJob
from connectors.token_database import TokenDatabase
from sim.config import ConfigError, parse_config
from sim.rundir.guard import prepare_run_dir
from sim.rundir.outputs import read_csv
from sim.runtime.point import run_point
from sim.sweep.experiment import run_experiment
from sim.workload.plan import plan_workload

DB = TokenDatabase(kv_caches_base_addr=(0,), block_len=(4096,), block_size=128, hash_block_size=128)


def _job(draw: float) -> LoadJob:
    return LoadJob(0, 128, b"", ([0],), draw=draw)


def _synthetic(**opts: object) -> SyntheticVariant:
    v = SyntheticVariant(DB, SyntheticOptions.model_validate(opts))
    v.warm_up()
    return v


def test_registered_and_marked_as_not_computing_addresses() -> None:
    assert registry.get_address_variant("synthetic") is SyntheticVariant
    assert registry.get_address_variant("noop") is NoopVariant
    for cls in (SyntheticVariant, NoopVariant):
        assert cls.computes_addresses is False
        with pytest.raises(NotImplementedError, match="computes no addresses"):
            cls(DB, None).prepare_values([(0, 128)], [0])


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"hold_ms": -1.0}, "hold_ms"),
        ({"hold_ms": "5"}, "hold_ms"),
        ({"free_ms": True}, "free_ms"),
        ({"fail_prob": 1.5}, "fail_prob"),
        ({"free_kind": "spin"}, "free_kind"),
        ({"hold": 5.0}, "hold"),
    ],
)
def test_options_are_strict(raw: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: .*variant 'synthetic'"):
        SyntheticVariant.validate_options(raw)


def test_options_accept_ints_and_default() -> None:
    opts = SyntheticVariant.validate_options({"hold_ms": 5, "free_ms": 2})
    assert (opts.hold_ms, opts.free_ms, opts.free_kind, opts.fail_prob) == (5.0, 2.0, "sleep", 0.0)
    with pytest.raises(ValueError, match="takes no options"):
        NoopVariant.validate_options({"hold_ms": 1.0})


def test_unknown_option_is_a_one_line_config_error(write_config) -> None:
    path = write_config({"connector": {"variant": "synthetic", "options": {"hold_msec": 5}}})
    with pytest.raises(ConfigError) as exc:
        parse_config(path)
    msg = str(exc.value)
    assert "\n" not in msg and "connector.options" in msg and "hold_msec" in msg


def test_spin_uses_at_least_the_cpu_time_asked() -> None:
    c0 = time.thread_time_ns()
    spin_cpu(3_000_000)
    used = time.thread_time_ns() - c0
    assert 3_000_000 <= used < 3_000_000 * 1.5


def test_failure_follows_the_planned_draw() -> None:
    v = _synthetic(hold_ms=0.0, fail_prob=0.25)
    v.run(_job(0.25), 0, "per_group")  # draw >= p: succeeds
    with pytest.raises(SyntheticFailure, match=r"fail_prob 0\.25"):
        v.run(_job(0.2499), 0, "per_group")
    always = _synthetic(hold_ms=0.0, fail_prob=1.0)
    with pytest.raises(SyntheticFailure):
        always.run(_job(0.999), 0, "per_group")


def test_work_is_per_request_not_per_group() -> None:
    v = _synthetic(hold_ms=20.0)
    c0 = time.thread_time_ns()
    assert v.run(_job(0.5), 1, "per_group") == ([], None)
    assert time.thread_time_ns() - c0 < 5_000_000  # group 1 did not spin 20 ms


def test_kernel_is_calibrated_in_warm_up() -> None:
    cold = SyntheticVariant(DB, SyntheticOptions(hold_ms=0.0, free_ms=5.0, free_kind="kernel"))
    with pytest.raises(RuntimeError, match="warm_up"):
        cold.run(_job(0.5), 0, "per_group")
    cold.warm_up()
    cold.run(_job(0.5), 0, "per_group")


@pytest.mark.realthreads
def test_failures_in_a_run_are_the_seeded_draws(write_config) -> None:
    path = write_config(
        {
            "workload": {"requests": 40, "arrival": {"kind": "poisson", "rate_rps": 2000}},
            "connector": {
                "variant": "synthetic",
                "workers": 2,
                "options": {"hold_ms": 0.2, "fail_prob": 0.3},
            },
        }
    )
    _, points = parse_config(path)
    cfg = points[0].config
    res = run_point(points[0])
    planned = plan_workload(cfg, np.random.default_rng([cfg.seed, 0]))
    expected = {r.request_id for r in planned if r.draw < 0.3}
    failed = {r.request_id for r in res.records if r.status == "failed"}
    assert failed == expected and 0 < len(failed) < 40
    assert res.summary["failed"] == len(expected)
    assert all("injected failure" in r.error for r in res.records if r.status == "failed")


@pytest.mark.realthreads
def test_sweep_reports_hold_noise_floor_stall_and_switch_interval(write_config, tmp_path) -> None:
    """A tiny synthetic sweep end to end: summary columns and the manifest."""
    path = write_config(
        {
            "workload": {"requests": 24, "arrival": {"kind": "closed", "clients": 2}},
            "connector": {"variant": "synthetic", "workers": 2, "options": {"free_ms": 1.0}},
            "gil": {"switch_interval_ms": 2.0},
            "sweep": {"connector.options.hold_ms": [0.0, 4.0]},
        }
    )
    cfg, points = parse_config(path)
    out = tmp_path / "run"
    prepare_run_dir(out, force=False)
    run_experiment(cfg, points, path, out, isolate=False)
    rows = read_csv(out / "summary.csv")
    assert [float(r["hold_ms"]) for r in rows] == [0.0, 4.0]
    zero, four = (float(r["gil_hold_mean_ms"]) for r in rows)
    assert zero < 0.5 and abs(four - 4.0) <= 0.5
    for r in rows:
        assert float(r["noise_floor_p50_ms"]) <= float(r["noise_floor_p99_ms"])
        assert float(r["stall_p50_ms"]) <= float(r["stall_max_ms"])
        assert 0.0 <= float(r["gil_busy_probe"]) <= 1.0
    # the 4 ms holds keep the GIL busier than the empty requests do (the meter's ledger
    # over the probe's window; the stall itself moves with the machine's load: a CPU
    # hog beside the run can stall the probe more at hold 0 than the holds do)
    assert float(rows[1]["gil_busy_requests"]) > float(rows[0]["gil_busy_requests"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["switch_interval_ms"] == 2.0
    assert manifest["config"]["gil"]["switch_interval_ms"] == 2.0
