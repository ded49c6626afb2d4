"""The model against queueing theory (issue 40): Poisson arrivals, a fixed hold, free harness.

With the harness's costs and every OS latency set to zero, a point of synthetic
requests that only hold the GIL (no GIL-free part, an instant store) is a queue with
deterministic service:

* one load thread is M/D/1, whose mean wait is Pollaczek–Khinchine's ρD / (2(1 − ρ));
* with a GIL and a switch interval longer than any hold, more load threads do not
  serve more: the GIL makes them one server, still M/D/1;
* free-threaded (``gil.kind: none``) c threads on c cores are M/D/c, whose mean wait
  Cosmetatos' approximation gives (half M/M/c's, corrected; within ~2 % at these loads).

A request's ``queue_ms`` is its wait: from its planned arrival to the start of its hold.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sim.config import parse_config
from sim.model.driver import run_model_point
from tests.model.test_driver import write_calibration

HOLD_MS = 5.0


def _free_harness_calibration(path: Path) -> Path:
    """write_calibration's costs with the harness free and every OS latency zero."""
    write_calibration(path)
    data = json.loads(path.read_text())
    data["harness"] = dict.fromkeys(data["harness"], 0.0)
    data["variants"]["synthetic"]["overhead_ms"] = 0.0
    data["machine"]["cores"] = 4
    path.write_text(json.dumps(data))
    return path


def _mean_wait_ms(write_config, tmp_path, rate: float, workers: int, gil: dict[str, Any]) -> float:
    cal = _free_harness_calibration(tmp_path / "cal.json")
    path = write_config(
        {
            "mode": "model",
            "machine": {"calibration": str(cal), "background_load": 0.0, "cores": workers},
            "workload": {"requests": 30_000, "arrival": {"kind": "poisson", "rate_rps": rate}},
            "connector": {
                "variant": "synthetic",
                "workers": workers,
                "options": {"hold_ms": HOLD_MS, "free_ms": 0.0},
            },
            "store": {"latency_ms": 0.0, "bandwidth_gb_per_s": 1e6, "concurrency": 1024},
            "gil": {"probe": False, **gil},
        }
    )
    _cfg, points = parse_config(path)
    recs = run_model_point(points[0]).records
    assert all(r.status == "ok" for r in recs)
    assert np.mean([r.thread_cpu_ms for r in recs]) == pytest.approx(HOLD_MS)
    return float(np.mean([r.queue_ms for r in recs]))


def _pk_md1_ms(rho: float) -> float:
    return rho * HOLD_MS / (2 * (1 - rho))


def _mmc_wait_ms(rho: float, c: int) -> float:
    """M/M/c mean wait (Erlang C) at utilisation ``rho`` per server, mean service HOLD_MS."""
    a = rho * c
    tail = a**c / math.factorial(c) / (1 - rho)
    p_wait = tail / (sum(a**k / math.factorial(k) for k in range(c)) + tail)
    return p_wait * HOLD_MS / (c * (1 - rho))


def _cosmetatos_mdc_ms(rho: float, c: int) -> float:
    corr = 1 + (1 - rho) * (c - 1) * (math.sqrt(4 + 5 * c) - 2) / (16 * rho * c)
    return 0.5 * _mmc_wait_ms(rho, c) * corr


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_one_load_thread_is_md1(write_config, tmp_path, rho) -> None:
    wait = _mean_wait_ms(write_config, tmp_path, rho / HOLD_MS * 1e3, 1, {})
    assert wait == pytest.approx(_pk_md1_ms(rho), rel=0.10)


def test_with_a_gil_four_load_threads_are_one_server(write_config, tmp_path) -> None:
    """Four threads, four cores, a GIL and a 1 s switch interval: still M/D/1."""
    rho = 0.5
    wait = _mean_wait_ms(
        write_config, tmp_path, rho / HOLD_MS * 1e3, 4, {"switch_interval_ms": 1000.0}
    )
    assert wait == pytest.approx(_pk_md1_ms(rho), rel=0.10)
    assert wait > 10 * _cosmetatos_mdc_ms(rho / 4, 4)  # nothing like four servers


@pytest.mark.parametrize("c", [2, 4])
def test_free_threaded_c_load_threads_on_c_cores_are_mdc(write_config, tmp_path, c) -> None:
    rho = 0.7
    wait = _mean_wait_ms(write_config, tmp_path, rho * c / HOLD_MS * 1e3, c, {"kind": "none"})
    assert wait == pytest.approx(_cosmetatos_mdc_ms(rho, c), rel=0.12)
    assert wait < _mmc_wait_ms(rho, c)  # deterministic service waits less than exponential
