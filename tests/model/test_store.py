"""The store model (sim.store.model) on model mode's loop and on a SimPy clock (real mode's
kind): the same transfers must end at the same times with the same outcomes.

Covers what the store models: the fixed latency, processor sharing of the link,
the per-transfer cap, the concurrency limit (FIFO hand-over of slots), stalls,
failed attempts, retries with back-off, and giving up.
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any

import numpy as np
import pytest
import simpy

from sim.config import StoreConfig
from sim.model.loop import Loop
from sim.store.clock import SimpyClock
from sim.store.link import SharedLink
from sim.store.model import StoreModel, TransferOutcome

#: (start s, bytes, fault seed or None) — overlapping, so the link and the slots are shared.
_RNG = np.random.default_rng(7)
TRANSFERS = [
    (float(t), int(b), int(s))
    for t, b, s in zip(
        np.cumsum(_RNG.exponential(0.002, 60)),
        _RNG.integers(1, 40_000_000, 60),
        _RNG.integers(0, 2**31, 60),
        strict=True,
    )
]

CONFIGS = {
    "shared link": StoreConfig(bandwidth_gb_per_s=5, latency_ms=0.5, concurrency=64),
    "capped": StoreConfig(
        bandwidth_gb_per_s=6, per_transfer_gb_per_s=3, latency_ms=0.2, concurrency=64
    ),
    "slots": StoreConfig(bandwidth_gb_per_s=8, latency_ms=1.0, concurrency=2),
    "no latency": StoreConfig(bandwidth_gb_per_s=8, latency_ms=0.0, concurrency=3),
    "faults": StoreConfig(
        bandwidth_gb_per_s=10,
        latency_ms=0.3,
        concurrency=3,
        fail_prob=0.3,
        stall_prob=0.25,
        stall_ms=4.0,
        retries=2,
        retry_backoff_ms=1.5,
    ),
    "faults, no back-off": StoreConfig(
        bandwidth_gb_per_s=10,
        latency_ms=0.3,
        concurrency=1,
        fail_prob=0.5,
        retries=1,
        retry_backoff_ms=0.0,
    ),
}


def _faults(seed: int, cfg: StoreConfig) -> np.random.Generator | None:
    return np.random.default_rng([seed, 1]) if cfg.fail_prob or cfg.stall_prob else None


def _simpy(cfg: StoreConfig) -> list[tuple[float, TransferOutcome]]:
    env = simpy.Environment()
    store = StoreModel(SimpyClock(env), cfg)
    out: list[tuple[float, TransferOutcome] | None] = [None] * len(TRANSFERS)

    def one(i: int, start: float, nbytes: int, seed: int):
        yield env.timeout(start)
        done = env.event()
        store.transfer(nbytes, _faults(seed, cfg), done.succeed)
        res = yield done
        out[i] = (env.now, res)

    for i, (start, nbytes, seed) in enumerate(TRANSFERS):
        env.process(one(i, start, nbytes, seed))
    env.run()
    return [o for o in out if o is not None]


def _loop(cfg: StoreConfig) -> list[tuple[float, TransferOutcome]]:
    loop = Loop()
    store = StoreModel(loop, cfg)
    out: list[tuple[float, TransferOutcome] | None] = [None] * len(TRANSFERS)
    for i, (start, nbytes, seed) in enumerate(TRANSFERS):

        def begin(_a: object, i: int = i, nbytes: int = nbytes, seed: int = seed) -> None:
            def done(res: TransferOutcome) -> None:
                out[i] = (loop.now, res)

            store.transfer(nbytes, _faults(seed, cfg), done)

        loop.at(start, begin)
    loop.run()
    return [o for o in out if o is not None]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_same_transfers_end_at_the_same_times_with_the_same_outcomes(name: str) -> None:
    cfg = CONFIGS[name]
    ref, got = _simpy(cfg), _loop(cfg)
    assert len(ref) == len(got) == len(TRANSFERS)
    for (t_ref, o_ref), (t_got, o_got) in zip(ref, got, strict=True):
        assert t_got == pytest.approx(t_ref, rel=1e-12, abs=1e-15)
        assert o_got.waited_s == pytest.approx(o_ref.waited_s, rel=1e-12, abs=1e-15)
        assert (o_got.attempts, o_got.stalls) == (o_ref.attempts, o_ref.stalls)
        assert repr(o_got.error) == repr(o_ref.error)
    # The scenarios do what their names say.
    if cfg.concurrency < 4:
        assert any(o.waited_s > 0 for _t, o in got)
    if cfg.fail_prob:
        assert any(o.attempts > 1 for _t, o in got)
        assert any(o.error is not None for _t, o in got)
    if cfg.stall_prob:
        assert any(o.stalls for _t, o in got)
    alone = [t - s for (t, _o), (s, _b, _f) in zip(got, TRANSFERS, strict=True)]
    solo = [StoreModel(Loop(), cfg).transfer_time_s(b) for _s, b, _f in TRANSFERS]
    assert any(a > 1.5 * s for a, s in zip(alone, solo, strict=True))  # sharing slowed some


class _CountingClock:
    """Timers in time order, at most ``limit`` of them: a timer that keeps coming back
    fails the test instead of hanging it."""

    def __init__(self, now: float, limit: int = 100) -> None:
        self.now = now
        self._queue: list[tuple[float, int, Any, Any]] = []
        self._seq = 0
        self._limit = limit

    def after(self, delay: float, fn: Any, arg: Any = None) -> None:
        heappush(self._queue, (self.now + max(delay, 0.0), self._seq, fn, arg))
        self._seq += 1

    def run(self) -> None:
        for _ in range(self._limit):
            if not self._queue:
                return
            self.now, _seq, fn, arg = heappop(self._queue)
            fn(arg)
        raise AssertionError(f"still {len(self._queue)} timer(s) after {self._limit}")


@pytest.mark.parametrize(
    ("now", "nbytes"),
    [
        (16384.14531365453, 0.6353926658630371),  # seen 4.5 simulated hours into a day
        (1e9, 10_000.0),  # a step of the clock moves 47,600 bytes here
    ],
)
def test_a_transfer_ends_when_what_it_has_left_is_below_the_clocks_resolution(
    now: float, nbytes: float
) -> None:
    """Its finish time rounds to now: it ends now, not a timer at now for ever."""
    clock = _CountingClock(now)
    link = SharedLink(clock, 400e9)
    ended: list[float] = []
    link.send(nbytes, lambda _arg: ended.append(clock.now))
    clock.run()
    assert ended == [now]
