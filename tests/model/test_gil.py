"""The simulated GIL's rules on small deterministic scenarios (sim.model.gil, sim.model.cores).

Threads here are written as generators for readability; ``_spawn`` drives one on the
model's callback loop: each yielded ``("sleep", s)``, ``("acquire",)``, ``("run", s)``
or ``("cpu", s)`` (a GIL-free kernel on the cores) resumes the generator once done.
"""

from __future__ import annotations

import random

import pytest

from sim.model.cores import Cores
from sim.model.gil import CPythonGil, NoGil
from sim.model.loop import Loop


class _Env:
    """A loop, cores and a GIL, and generator threads driven on them."""

    def __init__(self, loop: Loop, cores: Cores, gil) -> None:
        self.loop, self.cores, self.gil = loop, cores, gil

    @property
    def now(self) -> float:
        return self.loop.now

    def process(self, gen, name: str | None = None) -> None:
        self.loop.after(0.0, lambda _a: self._step(gen, name))

    def _step(self, gen, name) -> None:
        try:
            op = next(gen)
        except StopIteration:
            return
        resume = lambda *_a: self._step(gen, name)  # noqa: E731
        if op[0] == "sleep":
            self.loop.after(op[1], resume)
        elif op[0] == "acquire":
            self.gil.acquire(op[1], resume)
        elif op[0] == "run":
            self.gil.run(op[1], op[2], resume)
        elif op[0] == "cpu":
            self.cores.run(op[1], resume)
        else:  # pragma: no cover - a typo in a test
            raise ValueError(op)

    def run(self) -> None:
        self.loop.run()


def _world(cores: int = 4, si_ms: float = 5.0, kind: str = "cpython"):
    loop = Loop()
    c = Cores(loop, cores)
    gil = (
        NoGil(loop, c)
        if kind == "none"
        else CPythonGil(loop, c, si_ms / 1e3, random.Random(1).random)
    )
    return _Env(loop, c, gil), c, gil


def _cpu_bound(env, gil, name, work_s, log):
    yield ("acquire", name)
    yield ("run", name, work_s)
    gil.release(name)
    log[name] = env.now


def test_one_thread_alone_runs_at_full_speed() -> None:
    env, _c, gil = _world()
    log: dict[str, float] = {}
    env.process(_cpu_bound(env, gil, "a", 0.050, log))
    env.run()
    assert log["a"] == pytest.approx(0.050)
    assert gil.forced_drops == 0


@pytest.mark.parametrize("si_ms", [5.0, 1.0])
def test_two_cpu_bound_threads_share_with_switch_interval_granularity(si_ms: float) -> None:
    env, _c, gil = _world(si_ms=si_ms)
    log: dict[str, float] = {}
    for name in ("a", "b"):
        env.process(_cpu_bound(env, gil, name, 0.050, log))
    env.run()
    # Together they take the sum of their work (one GIL), the first finishing one
    # switch interval before the second: they alternated in slices of one interval.
    assert max(log.values()) == pytest.approx(0.100)
    assert min(log.values()) == pytest.approx(0.100 - si_ms / 1e3)
    assert gil.forced_drops == pytest.approx(100 / si_ms - 2, abs=1)


def _io_thread(env, gil, waits: list[float]):
    """Ten rounds of 1 ms GIL-free I/O then 10 µs of Python; records each GIL wait."""
    for _ in range(10):
        yield ("sleep", 0.001)
        t0 = env.now
        yield ("acquire", "io")
        waits.append(env.now - t0)
        yield ("run", "io", 10e-6)
        gil.release("io")


def test_convoy_effect_a_thread_back_from_io_waits_a_switch_interval() -> None:
    env, _c, gil = _world(si_ms=5.0)
    waits: list[float] = []
    env.process(_cpu_bound(env, gil, "cpu", 1.0, {}))
    env.process(_io_thread(env, gil, waits))
    env.run()
    # Behind a CPU-bound holder every return from I/O costs a whole switch interval.
    assert len(waits) == 10
    assert all(w == pytest.approx(0.005) for w in waits)


def test_no_convoy_without_a_cpu_bound_thread() -> None:
    env, _c, gil = _world(si_ms=5.0)
    waits: list[float] = []
    env.process(_io_thread(env, gil, waits))
    env.run()
    assert waits == [0.0] * 10


def test_hand_off_is_not_fifo_among_several_waiters() -> None:
    env, _c, gil = _world(si_ms=1.0)
    order: list[str] = []

    def worker(name: str):
        yield ("acquire", name)
        for _ in range(20):
            yield ("run", name, 0.001)
            order.append(name)
        gil.release(name)

    for name in "abcd":
        env.process(worker(name))
    env.run()
    # With FIFO hand-off four CPU-bound threads would take strict turns (a b c d a b ...).
    turns = [n for i, n in enumerate(order) if i == 0 or order[i - 1] != n]
    fifo = all(turns[i] != turns[i + 1] and turns[i] == turns[i % 4] for i in range(8))
    assert not fifo
    assert sorted(set(order)) == list("abcd")


@pytest.mark.parametrize(("cores", "expected_s"), [(4, 0.050), (2, 0.100), (1, 0.200)])
def test_no_gil_scales_with_cores(cores: int, expected_s: float) -> None:
    env, _c, gil = _world(cores=cores, kind="none")
    log: dict[str, float] = {}
    for name in "abcd":
        env.process(_cpu_bound(env, gil, name, 0.050, log))
    env.run()
    assert max(log.values()) == pytest.approx(expected_s)


def test_with_a_gil_more_cores_do_not_help() -> None:
    for cores in (1, 4):
        env, _c, gil = _world(cores=cores)
        log: dict[str, float] = {}
        for name in "abcd":
            env.process(_cpu_bound(env, gil, name, 0.050, log))
        env.run()
        assert max(log.values()) == pytest.approx(0.200)


def test_gil_free_work_competes_for_cores() -> None:
    env, cores, _gil = _world(cores=2, kind="none")
    done: list[float] = []

    def kernel():
        yield ("cpu", 0.010)
        done.append(env.now)

    for _ in range(4):
        env.process(kernel())
    env.run()
    assert done == pytest.approx([0.020] * 4)
    assert cores.busy_core_s == pytest.approx(0.040)
