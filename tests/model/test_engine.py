"""Model mode's engine loop: it shares no store with the load, and its step has the real
engine's structure (build holding the GIL, forward without it).

Issue 31: turning the engine on made model-mode store transfers ~5x slower. The engine
uses no store; what it did was run its engine-alone baseline on the loop first, after
which every arrival planned inside the baseline's span came at once (a burst on the
shared link and the store's slots). Real mode starts the schedule after the baseline
(``HybridEnvironment.set_origin``); so must the model.
"""

from __future__ import annotations

import types
from contextlib import contextmanager
from typing import Any

import pytest

from sim.config import parse_config
from sim.model import engine as model_engine
from sim.model.driver import run_model_point
from sim.model.gil import CPythonGil
from sim.store.model import StoreModel
from tests.model.test_driver import write_calibration

#: Arrivals 50 ms apart, transfers of ~7 ms: in the absence of a burst no two transfers
#: meet, so each takes exactly the store's latency plus its bytes over the whole link.
_SPACED: dict[str, Any] = {
    "mode": "model",
    "workload": {"requests": 30, "arrival": {"kind": "constant", "rate_rps": 20}},
    "connector": {"variant": "synthetic", "workers": 2, "options": {"hold_ms": 2.0}},
    "store": {"bandwidth_gb_per_s": 0.01, "latency_ms": 1.0, "concurrency": 8},
    "gil": {"probe": True},
    # a baseline of 200 steps of >= 2 ms: the first ~8 arrivals fall inside its span
    "engine": {"baseline_steps": 200, "forward_ms": 2.0},
}


def _point(write_config, tmp_path, engine: bool) -> Any:
    cal = write_calibration(tmp_path / "cal.json")
    cfg = {**_SPACED, "machine": {"calibration": str(cal)}}
    cfg["engine"] = {**_SPACED["engine"], "enabled": engine}
    _, points = parse_config(write_config(cfg, name=f"engine-{engine}.yaml"))
    return points[0]


def test_turning_the_engine_on_leaves_every_transfer_time_unchanged(write_config, tmp_path) -> None:
    off = run_model_point(_point(write_config, tmp_path, False))
    on = run_model_point(_point(write_config, tmp_path, True))
    assert len(on.records) == len(off.records) == 30
    store = StoreModel(None, off.point.config.store)  # type: ignore[arg-type]
    for a, b in zip(off.records, on.records, strict=True):
        assert a.request_id == b.request_id and a.status == b.status == "ok"
        assert a.arrival_s == b.arrival_s  # the same planned schedule, in run time
        alone = store.transfer_time_s(a.bytes) * 1e3
        assert a.transfer_ms == pytest.approx(alone, rel=1e-9)
        assert b.transfer_ms == pytest.approx(alone, rel=1e-9)
        assert a.store_wait_ms == b.store_wait_ms == 0.0
        # injected at its planned time (a timer's lateness and the harness's CPU), not
        # when a baseline that started before it ended
        assert b.injected_s - b.arrival_s < 1e-3
    steps = on.tables["steps"]
    alone_rows = [r for r in steps if r["phase"] == "alone"]
    load_rows = [r for r in steps if r["phase"] == "load"]
    assert len(alone_rows) == 200 and load_rows
    # load steps count from the load's start, as real mode's rows count from set_origin
    assert 0.0 <= load_rows[0]["start_s"] < 2e-3
    assert alone_rows[-1]["start_s"] > 200 * 2e-3 > load_rows[0]["start_s"]


# -- the step's structure, real and model ------------------------------------------------


def _real_trace(monkeypatch) -> list[list[tuple[str, bool]]]:
    """What the real engine thread does in each step, and whether it holds the GIL then
    (outside a ``gil_free`` section it runs Python, so it does)."""
    from sim.instruments import engine as real_engine
    from sim.runtime.env import HybridEnvironment

    steps: list[list[tuple[str, bool]]] = []
    free = [False]

    @contextmanager
    def spy_free():
        free[0] = True
        try:
            with real_engine_gil_free():
                yield
        finally:
            free[0] = False

    real_engine_gil_free = real_engine.gil_free
    monkeypatch.setattr(real_engine, "gil_free", spy_free)

    def sleep(s: float) -> None:
        steps[-1].append(("forward", not free[0]))
        real_time.sleep(s)

    real_time = real_engine.time
    fake_time = types.SimpleNamespace(perf_counter_ns=real_time.perf_counter_ns, sleep=sleep)
    monkeypatch.setattr(real_engine, "time", fake_time)
    from sim.config import EngineConfig

    loop = real_engine.EngineLoop(
        EngineConfig(enabled=True, device="cpu", baseline_steps=3, forward_ms=1.0)
    )
    real_step = real_engine.EngineLoop._step

    def step(self, cmd):
        steps.append([])
        real_make = self._factory.make

        def make(*args, **kwargs):
            meta = real_make(*args, **kwargs)
            steps[-1].append(("build", not free[0]))
            return meta

        self._factory.make = make
        try:
            return real_step(self, cmd)
        finally:
            self._factory.make = real_make

    monkeypatch.setattr(real_engine.EngineLoop, "_step", step)
    env = HybridEnvironment(stall_timeout_s=30.0)
    try:
        loop.attach(env)
    finally:
        loop.detach()
    assert len(loop.rows) == 3
    return steps


def _model_trace(write_config, tmp_path, monkeypatch) -> tuple[list[list[Any]], Any]:
    """The model engine's GIL calls and waits, each step: build (GIL-held CPU work), the
    forward (a wait with the GIL let go), the GIL taken back."""
    steps: list[list[Any]] = []
    me = model_engine.ENGINE_THREAD
    holders: list[Any] = []

    def spy(name: str):
        real = getattr(CPythonGil, name)

        def call(self, thread, *args, **kwargs):
            if thread == me:
                holders.append(self)
                if name == "run_instant":  # a build, unless it says no (then it runs)
                    holds = self.holder == me
                    done = real(self, thread, *args, **kwargs)
                    if done:
                        steps[-1].append(("build", holds, args[0]))
                    return done
                if name == "run":
                    steps[-1].append(("build", self.holder == me, args[0]))
                elif name == "acquire" and steps and steps[-1] and steps[-1][-1][0] == "forward":
                    steps[-1].append(("resume", self.holder == me))
            return real(self, thread, *args, **kwargs)

        return call

    for name in ("run", "run_instant", "acquire"):
        monkeypatch.setattr(CPythonGil, name, spy(name))
    real_begin = model_engine.ModelEngine._begin
    real_built = model_engine.ModelEngine._built

    def begin(self, arg=None):
        steps.append([])
        return real_begin(self, arg)

    def built(self, arg=None):
        loop = self._loop
        before = list(loop.heap)
        real_built(self, arg)
        # the forward: a wait that ends in the engine asking for the GIL back
        (pushed,) = [e for e in loop.heap if e not in before and e.fn == self._forwarded]
        wait = pushed.t - loop.now
        steps[-1].append(("forward", self._gil.holder == me, wait))

    monkeypatch.setattr(model_engine.ModelEngine, "_begin", begin)
    monkeypatch.setattr(model_engine.ModelEngine, "_built", built)
    cfg = {
        "mode": "model",
        "machine": {"calibration": str(write_calibration(tmp_path / "cal.json"))},
        "workload": {"requests": 5},
        "engine": {"enabled": True, "baseline_steps": 3, "forward_ms": 1.0},
    }
    _, points = parse_config(write_config(cfg, name="trace.yaml"))
    res = run_model_point(points[0])
    return [s for s in steps if s], res


def test_the_model_step_has_the_real_steps_structure(write_config, tmp_path, monkeypatch) -> None:
    real = _real_trace(monkeypatch)
    assert real and all(s == [("build", True), ("forward", False)] for s in real)
    model, res = _model_trace(write_config, tmp_path, monkeypatch)
    assert len(model) >= 3
    for step in model[:-1]:  # the last may be cut short by the end of the point
        kinds = [(e[0], e[1]) for e in step]
        # the same build-then-forward as the real thread; then the GIL back, as the real
        # thread needs it to run again after its GIL-free sleep
        assert kinds[:2] == real[0]
        assert kinds[2:] == [("resume", False)]
        assert step[0][2] == pytest.approx(0.03e-3)  # the calibrated build hold (cached)
        assert step[1][2] >= 1e-3  # the forward, plus a sleep's lateness
    rows = res.tables["steps"]
    assert all(r["build_us"] >= 30.0 - 1e-6 for r in rows)


# -- the build hold's calibration --------------------------------------------------------


def test_the_build_hold_follows_the_steps_tokens_and_a_step_outside_is_refused(
    write_config, tmp_path, capsys
) -> None:
    import json

    from sim.cli import main as cli_main
    from sim.model.calibration import load_calibration

    cal = write_calibration(tmp_path / "cal.json")
    data = json.loads(cal.read_text())
    data["engine"]["cached"] = {"build_ms": 0.2, "by_tokens": {"8": 0.1, "32": 0.2, "256": 1.1}}
    cal.write_text(json.dumps(data))
    got = load_calibration(cal)
    assert got.engine_build_ms("cached") == 0.2
    assert got.engine_build_ms("cached", 32) == pytest.approx(0.2)
    assert got.engine_build_ms("cached", 144) == pytest.approx(0.65)
    assert got.engine_tokens("cached") == (8, 256)
    base = {"mode": "model", "machine": {"calibration": str(cal)}, "workload": {"requests": 4}}
    ok = write_config({**base, "engine": {"enabled": True, "batch_size": 200, "baseline_steps": 2}})
    assert cli_main(["run", str(ok), "-q"]) == 0  # 200 tokens: between 32 and 256
    far = write_config(
        {
            **base,
            "engine": {"enabled": True, "batch_size": 1024},
            "output": {"dir": str(tmp_path / "o2")},
        },
        name="far.yaml",
    )
    assert cli_main(["run", str(far), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(
        "an engine step of 1024 padded tokens (engine.batch_size 1024) is outside the "
        "calibrated range 8–256 of index variant 'cached'"
    )


def test_calibration_times_the_real_engines_build_after_a_forward(monkeypatch) -> None:
    from sim.calibration import measure_engine as measure
    from sim.instruments import engine as real_engine

    calls: list[int] = []
    real_build = real_engine.build_step

    def build(factory, variant, lens):
        calls.append(len(lens))
        return real_build(factory, variant, lens)

    monkeypatch.setattr(real_engine, "build_step", build)
    yields_at: list[int] = []  # its own GIL releases: tests/calibration/test_measure_yields.py
    monkeypatch.setattr(
        measure, "_build_yields", lambda f, v, lens, *_a: yields_at.append(len(lens)) or {"n": 1}
    )
    slept: list[float] = []
    monkeypatch.setattr(measure.time, "sleep", slept.append)
    got = measure.measure_engine(reps=2, batch_sizes=(8,))
    assert "cached" in got and "per_component" in got
    for entry in got.values():
        assert set(entry["by_tokens"]) == {"8", "32"}  # the sizes asked for and the default
        assert entry["build_ms"] == entry["by_tokens"]["32"] > 0
        assert entry["yields"] == {"n": 1}
    assert set(yields_at) == {32}  # at the default batch only
    # per variant and size: one warm-up and two timed builds, each timed one after a sleep
    # of the default forward (5 ms)
    assert calls and set(calls) == {8, 32}
    assert slept and set(slept) == {0.005}
    assert len(slept) * 3 == len(calls) * 2
