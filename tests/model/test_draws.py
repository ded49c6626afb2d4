"""Model mode's speed shortcuts change no result: the same records, summary and tables,
bit for bit, with every shortcut on as with every one off.

The shortcuts (sim.model.loop.Loop.clear, sim.model.cores.Cores.instant) let a callback
that ends its loop entry go straight on to what the loop would run next anyway (a hand-off,
a lone waiter's drop request, CPU work nothing can interrupt) instead of scheduling it;
turning them off (both answer False) runs the reference path, one loop entry per step.
The latency and spread draws are C-level iterators (sim.model.costs._sampler): checked
against the plain expression on the same stream.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from sim.config import parse_config
from sim.model.cores import Cores
from sim.model.costs import Latency, Spread
from sim.model.draws import Uniforms
from sim.model.driver import run_model_point
from sim.model.loop import Loop
from tests.model.test_driver import write_calibration

SAMPLED = {
    "wake_samples_ms": [0.01, 0.02, 0.05, 0.3],
    "timer_late_samples_ms": [0.05, 0.08, 0.2],
    "sleep_late_samples_ms": [0.06, 0.09, 0.5],
    "probe_late_samples_ms": [0.01, 0.03, 0.1],
    "gil_handoff_samples_ms": [0.03, 0.04, 0.06],
    "gil_forced_samples_ms": [0.01, 0.03, 0.09],
    "gil_back_samples_ms": [0.015, 0.02, 0.035],
}

#: Each takes other paths: contention behind long holds with the probe, faults, retries,
#: kernels, background load and the engine, a closed loop, a free-threaded interpreter.
CASES: dict[str, dict[str, Any]] = {
    "contended-probe": {
        "workload": {"requests": 150, "arrival": {"kind": "poisson", "rate_rps": 60}},
        "connector": {"variant": "synthetic", "workers": 4, "options": {"hold_ms": 12.0}},
        "gil": {"switch_interval_ms": 5.0, "probe": True},
    },
    "busy-engine-faults": {
        "workload": {"requests": 120, "arrival": {"kind": "poisson", "rate_rps": 150}},
        "connector": {
            "variant": "synthetic",
            "workers": 3,
            "options": {"hold_ms": 4.0, "free_ms": 0.5, "free_kind": "kernel"},
        },
        "store": {
            "concurrency": 1,
            "fail_prob": 0.2,
            "stall_prob": 0.2,
            "stall_ms": 3.0,
            "retries": 2,
            "retry_backoff_ms": 1.0,
        },
        "gil": {"switch_interval_ms": 1.0, "probe": True},
        "engine": {"enabled": True, "baseline_steps": 5, "forward_ms": 2.0},
    },
    "closed-sleep": {
        "workload": {"requests": 120, "arrival": {"kind": "closed", "clients": 5, "think_ms": 2}},
        "connector": {"variant": "synthetic", "workers": 2, "options": {"hold_ms": 3.0}},
        "gil": {"probe": True},
    },
    "no-gil": {
        "workload": {"requests": 100, "arrival": {"kind": "poisson", "rate_rps": 200}},
        "connector": {"variant": "synthetic", "workers": 4, "options": {"hold_ms": 5.0}},
        "gil": {"kind": "none", "probe": True},
    },
}


@pytest.fixture
def sampled_calibration(tmp_path):
    """Latencies as several samples (each one a draw, as a real calibration has them),
    and a background load."""
    path = write_calibration(tmp_path / "cal.json")
    data = json.loads(path.read_text())
    data["harness"].update(SAMPLED, background_load=0.7)
    path.write_text(json.dumps(data))
    return path


def _run(write_config, cal, case: str, seed: int) -> tuple[list[str], dict[str, str], str]:
    cfg = {"mode": "model", "seed": seed, "machine": {"calibration": str(cal)}, **CASES[case]}
    _, points = parse_config(write_config(cfg, name=f"{case}-{seed}.yaml"))
    res = run_model_point(points[0])
    # repr: NaN == NaN, and every float to its last bit
    rows = [repr(sorted(r.as_row().items())) for r in res.records]
    return rows, {k: repr(v) for k, v in res.summary.items()}, repr(res.tables)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_shortcut_off_gives_the_very_same_run(
    case, write_config, sampled_calibration, monkeypatch
) -> None:
    for seed in (1, 2, 3):
        fast = _run(write_config, sampled_calibration, case, seed)
        with monkeypatch.context() as m:
            m.setattr(Loop, "clear", lambda self, t: False)
            m.setattr(Cores, "instant", lambda self, work_s, shared=False: False)
            slow = _run(write_config, sampled_calibration, case, seed)
        assert fast[0] == slow[0], f"{case} seed {seed}: records differ"
        assert fast[1] == slow[1], f"{case} seed {seed}: summary differs"
        assert fast[2] == slow[2], f"{case} seed {seed}: tables differ"
        assert len(fast[0]) == CASES[case]["workload"]["requests"]


def test_the_shortcuts_are_taken(write_config, sampled_calibration, monkeypatch) -> None:
    """The comparison above is not vacuous: a contended point goes on without an entry."""
    taken = []
    clear = Loop.clear

    def spy(self: Loop, t: float) -> bool:
        ok = clear(self, t)
        taken.append(ok)
        return ok

    monkeypatch.setattr(Loop, "clear", spy)
    _run(write_config, sampled_calibration, "contended-probe", 1)
    assert sum(taken) > 50


def test_latency_and_spread_draws_are_the_plain_expression_on_the_same_stream() -> None:
    samples_ms = [0.5, 0.1, 0.9, 0.3, 0.7]
    ratios = [0.8, 1.0, 1.3]
    fast_u, ref_u = Uniforms(np.random.default_rng(5)), Uniforms(np.random.default_rng(5))
    lat, spread = Latency(samples_ms, fast_u.next), Spread(ratios, fast_u.next)
    one = Latency([0.2], fast_u.next)  # one sample: no draw
    got, want = [], []
    for i in range(5000):  # interleaved with other draws of the same stream
        got += [lat(), lat.draw(), spread.draw(), one.draw(), fast_u.next() if i % 3 else 0.0]
        want += [
            samples_ms[int(ref_u.next() * 5)] / 1e3,
            samples_ms[int(ref_u.next() * 5)] / 1e3,
            ratios[int(ref_u.next() * 3)],
            0.2 / 1e3,
            ref_u.next() if i % 3 else 0.0,
        ]
    assert got == want
