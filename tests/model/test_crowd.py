"""The crowd (sim.model.cores, ``Cores(crowd=...)``): with the GIL off, load threads that run
Python at once slow each other by the calibration's parallel slowdown (issue 39: without
it the model's scalar x 2 GIL-off p99 came out 42 % short of the real run's)."""

from __future__ import annotations

import pytest

from sim.model.cores import Cores
from sim.model.costs import _crowd
from sim.model.loop import Loop
from sim.model.nogil import LOAD_THREAD_PREFIX, NoGil


def _two_at(offset_s: float, crowd: tuple[float, ...], n: int = 2, work_s: float = 0.1):
    """Two shared tasks of ``work_s`` on ``n`` cores, the second started ``offset_s``
    after the first; when each ended."""
    loop = Loop()
    cores = Cores(loop, n, crowd=crowd)
    ends: dict[str, float] = {}
    cores.run(work_s, lambda _a: ends.setdefault("a", loop.now), True)
    loop.after(
        offset_s, lambda _a: cores.run(work_s, lambda _b: ends.setdefault("b", loop.now), True)
    )
    loop.run()
    return ends["a"], ends["b"]


def test_two_at_once_each_take_the_slowdown() -> None:
    a, b = _two_at(0.0, (1.0, 1.0, 1.5))
    assert a == pytest.approx(0.15) and b == pytest.approx(0.15)


def test_partly_at_once_is_slowed_only_while_both_run() -> None:
    """b starts at 50 ms: a has 50 ms left, done at 1.5x in 75 ms (t = 125 ms); b has done
    50/1.5 ms by then and runs its rest alone."""
    a, b = _two_at(0.05, (1.0, 1.0, 1.5))
    assert a == pytest.approx(0.125)
    assert b == pytest.approx(0.125 + (0.1 - 0.075 / 1.5))


def test_no_crowd_and_one_core_are_unchanged() -> None:
    assert _two_at(0.0, ()) == pytest.approx((0.1, 0.1))
    # on one core the two take turns (processor sharing), never both at once: no slowdown
    assert _two_at(0.0, (1.0, 1.0, 1.5), n=1) == pytest.approx((0.2, 0.2))


def test_more_threads_than_cores_use_the_slowdown_at_the_cores() -> None:
    """Three at once on two cores: each has 2/3 of a core and two run at once (crowd[2])."""
    loop = Loop()
    cores = Cores(loop, 2, crowd=(1.0, 1.0, 1.5, 9.0))
    ends: list[float] = []
    for _ in range(3):
        cores.run(0.1, lambda _a: ends.append(loop.now), True)
    loop.run()
    assert ends == pytest.approx([0.1 * 1.5 * 3 / 2] * 3)
    assert cores.busy_core_s == pytest.approx(2 * 0.1 * 1.5 * 3 / 2)  # the cores were full


def test_unshared_work_is_neither_counted_nor_slowed() -> None:
    loop = Loop()
    cores = Cores(loop, 2, crowd=(1.0, 1.0, 2.0))
    ends: list[float] = []
    cores.run(0.1, lambda _a: ends.append(loop.now), True)
    cores.run(0.1, lambda _a: ends.append(loop.now))  # the simulation thread's, say
    loop.run()
    assert ends == pytest.approx([0.1, 0.1])
    assert cores.shared_running == 0


def test_nogil_shares_load_threads_only() -> None:
    loop = Loop()
    cores = Cores(loop, 2, crowd=(1.0, 1.0, 2.0))
    gil = NoGil(loop, cores)
    ends: dict[str, float] = {}
    gil.run(f"{LOAD_THREAD_PREFIX}0", 0.1, lambda _a: ends.setdefault("l0", loop.now))
    assert not gil.run_instant(f"{LOAD_THREAD_PREFIX}1", 0.1)  # beside one: never at once
    gil.run(f"{LOAD_THREAD_PREFIX}1", 0.1, lambda _a: ends.setdefault("l1", loop.now))
    loop.run()
    assert ends == {"l0": pytest.approx(0.2), "l1": pytest.approx(0.2)}
    gil.run("kvsim-sim", 0.1, lambda _a: ends.setdefault("sim", loop.now))
    gil.run(f"{LOAD_THREAD_PREFIX}0", 0.1, lambda _a: ends.setdefault("l0b", loop.now))
    loop.run()
    assert ends["sim"] == pytest.approx(0.3) and ends["l0b"] == pytest.approx(0.3)


def test_the_crowd_comes_from_the_calibrations_parallel_slowdown() -> None:
    entry = {
        "parallel_slowdown": {
            "2": {"slowdown": 1.4, "ratio": 1.3, "overlap": 0.8},
            "3": {"slowdown": 0.9, "ratio": 0.9, "overlap": 0.9},  # never faster
        }
    }
    assert _crowd(entry) == (1.0, 1.0, 1.4, 1.0)
    assert _crowd({}) == ()


def test_no_instant_shared_work_beside_another_shared_task() -> None:
    """The shortcut would run it at full pace while the crowd should slow both."""
    loop = Loop()
    cores = Cores(loop, 2, crowd=(1.0, 1.0, 2.0))
    cores.run(0.1, lambda _a: None, True)
    assert not cores.instant(0.01, True)
    assert cores.instant(0.01)  # unshared work beside it: a core is free, nothing due first
    assert loop.now == pytest.approx(0.01)
