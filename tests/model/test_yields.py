"""A hold's own GIL releases (sim.model.gil pass_on, sim.model.threads.HeldParts) and the
yield points a calibration gives (sim.model.costs)."""

from __future__ import annotations

import random

import pytest

from sim.config.sections import GilConfig
from sim.model.cores import Cores
from sim.model.costs import _yield_points, evenly
from sim.model.gil import CPythonGil, NoGil
from sim.model.loop import Loop
from sim.model.threads import HeldParts


def _gil(handoff_s: float = 0.0, si_ms: float = 5.0) -> tuple[Loop, CPythonGil]:
    loop = Loop()
    return loop, CPythonGil(loop, Cores(loop, 4), si_ms / 1e3, random.Random(3).random, handoff_s)


def _holder(loop: Loop, gil, hold_s: float, points: tuple[float, ...], log: dict) -> None:
    """Thread ``a`` takes the GIL at 0 and runs ``hold_s`` cut at ``points``."""
    parts = HeldParts(gil, "a")

    def done(_arg=None) -> None:
        log["a"] = loop.now
        gil.release("a")

    def start(_arg=None) -> None:
        gil.acquire("a", lambda _x: parts.run(hold_s, 0.0, points, done))

    loop.after(0.0, start)


def _waiter(loop: Loop, gil, at_s: float, work_s: float, log: dict) -> None:
    """Thread ``b`` wants the GIL at ``at_s`` for ``work_s``."""

    def got(_arg=None) -> None:
        log["b_in"] = loop.now
        gil.run("b", work_s, lambda _x: (log.__setitem__("b", loop.now), gil.release("b")))

    loop.after(at_s, lambda _a: gil.acquire("b", got))


def test_nobody_waiting_the_parts_add_up_to_the_hold() -> None:
    loop, gil = _gil()
    log: dict = {}
    _holder(loop, gil, 0.010, evenly(5, (0.2, 0.8)), log)
    loop.run()
    assert log["a"] == pytest.approx(0.010)
    assert gil.switches == 1


def test_a_waiter_gets_in_at_the_first_point_after_it_came() -> None:
    loop, gil = _gil()
    log: dict = {}
    _holder(loop, gil, 0.010, (0.3, 0.6), log)
    _waiter(loop, gil, 0.001, 0.002, log)
    loop.run()
    # Not at the switch interval (5 ms): at the hold's own release at 3 ms; the holder
    # waits out the waiter's 2 ms and ends 2 ms late.
    assert log["b_in"] == pytest.approx(0.003)
    assert log["b"] == pytest.approx(0.005)
    assert log["a"] == pytest.approx(0.012)
    assert gil.forced_drops == 0


def test_without_points_the_waiter_waits_for_the_drop_request() -> None:
    loop, gil = _gil()
    log: dict = {}

    def start(_arg=None) -> None:
        gil.acquire("a", lambda _x: gil.run("a", 0.010, lambda _y: gil.release("a")))

    loop.after(0.0, start)
    _waiter(loop, gil, 0.001, 0.002, log)
    loop.run()
    assert log["b_in"] == pytest.approx(0.006)  # its switch interval ran out: a forced drop
    assert gil.forced_drops == 1


def test_the_waiters_wake_up_overlaps_the_holders_release() -> None:
    loop, gil = _gil(handoff_s=0.0005)
    log: dict = {}
    _holder(loop, gil, 0.010, (0.3,), log)
    _waiter(loop, gil, 0.001, 0.002, log)
    loop.run()
    # b takes the GIL 0.5 ms after the release at 3 ms; a's hold ran on meanwhile (the
    # release outlasted the wake-up), so a loses b's 2 ms and its own wake-up back, not b's.
    assert log["b_in"] == pytest.approx(0.0035)
    assert log["b"] == pytest.approx(0.0055)
    assert log["a"] == pytest.approx(0.0055 + 0.0005 + 0.010 - 0.003 - 0.0005)


def test_pass_on_with_nobody_waiting_does_nothing() -> None:
    _loop, gil = _gil()
    assert gil.take("a")
    assert gil.pass_on("a", lambda _x: None) is None
    assert gil.holder == "a"
    with pytest.raises(RuntimeError):
        gil.pass_on("b", lambda _x: None)


def test_no_gil_never_passes_on() -> None:
    loop = Loop()
    assert NoGil(loop, Cores(loop, 2)).pass_on("a", lambda _x: None) is None


def test_evenly_spaces_the_rounded_count_over_the_span() -> None:
    assert evenly(1.6, (0.2, 0.4)) == pytest.approx((0.25, 0.35))
    assert evenly(0.4, (0.2, 0.4)) == ()
    assert evenly(1.0, [0.0, 1.0]) == pytest.approx((0.5,))


_ROWS = tuple(
    {"chunks": c, "regions": r, "per_request": n, "span": [0.2, 0.4]}
    for c, r, n in ((256, 61, 1.0), (1024, 61, 9.0), (2048, 61, 26.0), (1024, 4, 3.0))
)


@pytest.mark.parametrize(
    ("regions", "chunks", "count"),
    [
        (61, 1024, 9),  # measured
        (61, 640, 5),  # between two sizes: linear
        (61, 128, 0),  # below the smallest: scaled down (0.5 rounds to 0)
        (61, 4096, 52),  # above the largest: in proportion
        (8, 1024, 3),  # the nearest region count measured
    ],
)
def test_yield_points_follow_the_calibrations_rows(regions: int, chunks: int, count: int) -> None:
    assert len(_yield_points(_ROWS, regions, chunks)) == count


def _costs(own_releases: bool, kind: str = "cpython"):
    from sim.config import ExperimentConfig
    from sim.model.calibration import Calibration
    from sim.model.costs import point_costs

    cfg = ExperimentConfig.model_validate(
        {
            "name": "t",
            "mode": "model",
            "model": {"regions": 61, "block_len": [4096], "block_size": 128, "num_blocks": 16384},
            "workload": {"requests": 1, "tokens": 1024 * 128},
            "connector": {"variant": "numpy"},
            "engine": {"enabled": True, "index_variant": "cached"},
            "gil": {"own_releases": own_releases, "kind": kind},
        }
    )
    fit = {"intercept": 1.0, "per_chunk_region": 0.0, "per_chunk": 0.0, "per_group": 0.0}
    harness = {
        "sim_cpu_per_request_ms": 0.1,
        "probe_hold_ms": 0.01,
        **{f"{k}_ms": 0.05 for k in ("wake", "timer_late", "sleep_late", "probe_late")},
    }
    data = {
        "machine": {"cores": 2},
        "harness": harness,
        "variants": {"numpy/per_group": {"hold": fit, "free": fit, "yields": list(_ROWS)}},
        "engine": {"cached": {"build_ms": 0.2, "yields": {"per_request": 2.0, "span": [0.5, 0.9]}}},
    }
    return point_costs(cfg, Calibration("cal.json", "d", data))


def test_own_releases_are_on_unless_turned_off() -> None:
    assert GilConfig().own_releases  # the default (docs/model-mode.md, A hold's own releases)
    off = _costs(False)
    assert off.yield_points(1024 * 128) == () and off.engine_yields == ()
    on = _costs(True)
    assert len(on.yield_points(1024 * 128)) == 9  # the 1,024-chunk row at 61 regions
    assert on.engine_yields == pytest.approx((0.6, 0.8))
    # no GIL, nothing to release
    none = _costs(True, "none")
    assert none.yield_points(1024 * 128) == () and none.engine_yields == ()
