"""Budgets from the real plan: a trace's own clock, the slowest configured bandwidth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sim.config import ConfigError
from sim.preflight import parse_checked
from sim.preflight.budget import estimate_point
from sim.workload.plan import preview_workload
from sim.workload.trace import write_trace

MODEL = {"regions": 4, "block_len": [1024], "block_size": 128, "num_blocks": 256}


def _rows(last_ms: float, n: int = 5) -> list[dict[str, Any]]:
    """``n`` requests sharing a prefix, evenly spread from 0 to ``last_ms``."""
    return [
        {
            "timestamp": round(last_ms * i / (n - 1)),
            "input_length": 2048,
            "output_length": 1,
            "hash_ids": [0, 1, 2, 3],
        }
        for i in range(n)
    ]


def _trace_cfg(write_config, tmp_path: Path, last_ms: float, **extra: Any) -> Path:
    write_trace(tmp_path / "trace.jsonl", _rows(last_ms))
    arrival = {"kind": "trace", "path": "trace.jsonl", **extra.pop("arrival", {})}
    # requests and tokens at their defaults: a trace sets them (TINY's would be refused)
    workload = {"requests": 40, "tokens": 131072, "arrival": arrival}
    return write_config({"model": MODEL, "workload": workload, **extra})


def test_one_hour_trace_at_speedup_1_is_refused_with_the_arithmetic(write_config, tmp_path):
    path = _trace_cfg(
        write_config, tmp_path, 3_600_000, arrival={"speedup": 1}, limits={"max_point_s": 600}
    )
    with pytest.raises(ConfigError) as err:
        parse_checked(path)
    msg = str(err.value)
    assert "the trace's span of 1 h over workload.arrival.speedup 1" in msg
    assert "past limits.max_point_s (600 s)" in msg
    assert "\n" not in msg


def test_the_same_trace_at_speedup_20_fits_and_the_estimate_is_its_span(write_config, tmp_path):
    path = _trace_cfg(
        write_config, tmp_path, 3_600_000, arrival={"speedup": 20}, limits={"max_point_s": 600}
    )
    _, points = parse_checked(path)
    cfg = points[0].config
    preview = preview_workload(cfg)
    assert preview.span_s == pytest.approx(180.0)
    est = estimate_point(cfg, preview)
    # the span, then the last request's own transfer (tiny here)
    assert 180.0 <= est.wall_s < 180.1
    assert "span of 1 h over workload.arrival.speedup 20" in est.wall_why


def test_a_trace_lasting_ten_to_the_twelve_ms_is_refused(write_config, tmp_path):
    path = _trace_cfg(write_config, tmp_path, 1e12)
    with pytest.raises(ConfigError, match=r"would take at least .* days of wall time"):
        parse_checked(path)


def test_a_tiny_per_transfer_bandwidth_is_refused(write_config):
    path = write_config(
        {
            "model": MODEL,
            "workload": {"requests": 4, "tokens": 131072},  # 4 MiB a request: 2.3 h at the cap
            "store": {"per_transfer_gb_per_s": 0.000001, "concurrency": 2},
        }
    )
    with pytest.raises(ConfigError) as err:
        parse_checked(path)
    msg = str(err.value)
    assert "slowest configured bandwidth" in msg
    assert "store.per_transfer_gb_per_s 1e-06 × store.concurrency 2" in msg


def test_a_capped_transfer_counts_at_the_cap(write_config):
    """Without the cap the same config fits; with it the bound is the bytes at the cap."""
    base = {"model": MODEL, "workload": {"requests": 4, "tokens": 1024}}
    free = parse_checked(write_config(base))[1][0].config
    capped = parse_checked(
        write_config(
            {**base, "store": {"per_transfer_gb_per_s": 0.001, "concurrency": 1}},
            name="capped.yaml",
        )
    )[1][0].config
    nbytes = 8 * 1024 * 4  # 8 chunks × 1024 bytes × 4 regions
    assert estimate_point(capped, 4).wall_s >= 4 * nbytes / 1e6
    assert estimate_point(free, 4).wall_s < estimate_point(capped, 4).wall_s


def test_a_curves_span_follows_its_steps(write_config) -> None:
    arrival = {"kind": "curve", "rate_rps": [10.0, 100.0], "step_s": 10.0}
    _, (point,) = parse_checked(write_config({"workload": {"requests": 51, "arrival": arrival}}))
    assert "on the curve" in estimate_point(point.config, 51).wall_why
    service = estimate_point(point.config, 1).wall_s  # one request: its transfer alone
    assert estimate_point(point.config, 51).wall_s == pytest.approx(5.0 + service)
    assert estimate_point(point.config, 1101).wall_s == pytest.approx(20.0 + service)
    assert estimate_point(point.config, 1201).wall_s == pytest.approx(30.0 + service)
    assert estimate_point(point.config, 1211).wall_s == pytest.approx(30.1 + service)
