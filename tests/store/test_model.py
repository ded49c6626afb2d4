"""The modelled store: transfer time, injected faults, retries, seeded fault draws."""

from __future__ import annotations

import math
import threading
import time
from functools import partial

import pytest
import simpy

from connectors.base import AddressVariant
from connectors.registry import ADDRESS_VARIANTS
from sim.config import ConfigError, StoreConfig, parse_config
from sim.runtime.env import HybridEnvironment
from sim.runtime.pipeline import WatchdogError
from sim.runtime.point import run_point
from sim.store.clock import SimpyClock
from sim.store.model import StoreModel, TransferOutcome

pytestmark = pytest.mark.realthreads


def test_transfer_time_is_latency_plus_bytes_over_bandwidth() -> None:
    env = SimpyClock(simpy.Environment())
    store = StoreModel(env, StoreConfig(bandwidth_gb_per_s=10, latency_ms=2, concurrency=1))
    assert store.transfer_time_s(10**9) == pytest.approx(0.002 + 0.1)
    capped = StoreConfig(bandwidth_gb_per_s=10, per_transfer_gb_per_s=2, latency_ms=0)
    assert StoreModel(env, capped).transfer_time_s(10**9) == pytest.approx(0.5)


def _ends(cfg: StoreConfig, sizes: list[int], starts: list[float] | None = None) -> list[float]:
    """When each transfer ends, on SimPy's virtual clock (exact, whatever the load)."""
    env = simpy.Environment()
    clock = SimpyClock(env)
    store = StoreModel(clock, cfg)
    ends = [math.nan] * len(sizes)

    def done(i: int, out: TransferOutcome) -> None:
        assert out.error is None
        ends[i] = env.now

    for i, start in enumerate(starts or [0.0] * len(sizes)):
        clock.after(start, lambda _a, i=i: store.transfer(sizes[i], None, partial(done, i)))
    env.run()
    return ends


def test_two_equal_transfers_started_together_each_take_twice_as_long() -> None:
    cfg = StoreConfig(bandwidth_gb_per_s=25, latency_ms=0, concurrency=8)
    (alone,) = _ends(cfg, [10**9])
    assert alone == pytest.approx(0.04)
    assert _ends(cfg, [10**9, 10**9]) == pytest.approx([2 * alone, 2 * alone])


def test_the_link_is_shared_as_transfers_come_and_go() -> None:
    # 1 GB at 10 GB/s; a second 0.5 GB transfer joins at 50 ms: both move at 5 GB/s
    # until the second is done (100 ms later), then the first has 0.0 GB left alone.
    cfg = StoreConfig(bandwidth_gb_per_s=10, latency_ms=0, concurrency=4)
    first, second = _ends(cfg, [10**9, 5 * 10**8], [0.0, 0.05])
    assert second == pytest.approx(0.15)
    assert first == pytest.approx(0.15)
    # Three transfers: the per-transfer cap binds alone, the share binds together.
    capped = StoreConfig(bandwidth_gb_per_s=10, per_transfer_gb_per_s=4, latency_ms=1)
    assert _ends(capped, [4 * 10**8]) == pytest.approx([0.101])
    assert _ends(capped, [3 * 10**8] * 3) == pytest.approx([0.091] * 3)


def test_concurrency_limits_transfers_in_flight() -> None:
    cfg = StoreConfig(bandwidth_gb_per_s=1, latency_ms=20, concurrency=2)
    ends = _ends(cfg, [0, 0, 0, 0])
    assert ends == pytest.approx([0.02, 0.02, 0.04, 0.04])


def test_the_old_bandwidth_key_says_what_it_is_called_now(write_config) -> None:
    text = "name: old\nworkload: {requests: 2}\nstore: {bandwidth_gbps: 200}\n"
    with pytest.raises(ConfigError) as err:
        parse_config(write_config(text=text))
    msg = str(err.value)
    assert "bandwidth_gbps is now bandwidth_gb_per_s" in msg and "GB/s" in msg
    assert "\n" not in msg


def test_always_failing_store_fails_every_request_after_all_retries(write_config) -> None:
    _, points = parse_config(
        write_config({"store": {"fail_prob": 1.0, "retries": 2, "retry_backoff_ms": 0.1}})
    )
    res = run_point(points[0])
    assert all(r.status == "failed" and r.attempts == 3 for r in res.records)
    assert all(r.error.startswith("StoreError: ") for r in res.records)
    assert res.summary["errors"] == "StoreError=8"
    assert res.summary["ok"] == 0 and res.summary["failed"] == 8


def test_partial_faults_add_up_and_are_seeded(write_config) -> None:
    over = {
        "workload": {"requests": 40},
        "store": {"fail_prob": 0.3, "retries": 0, "stall_prob": 0.2, "stall_ms": 1},
    }
    _, points = parse_config(write_config(over))
    first = run_point(points[0])
    second = run_point(points[0])
    s = first.summary
    assert s["ok"] + s["failed"] == s["requests"] == 40
    assert 0 < s["failed"] < 40
    failed = {r.request_id for r in first.records if r.status == "failed"}
    assert failed == {r.request_id for r in second.records if r.status == "failed"}


class _Hang(AddressVariant):
    name = "test-hang"
    computes_addresses = False  # returns no addresses: not held to the list contract
    description = "test only: hangs until released"
    release = threading.Event()

    def warm_up(self) -> None:
        return None

    def run(self, job, group, handler):
        self.release.wait(10)
        return [], None


def test_hanging_worker_ends_the_run_with_a_clear_error(write_config) -> None:
    with ADDRESS_VARIANTS.temporary(_Hang):
        try:
            _, points = parse_config(
                write_config(
                    {"connector": {"variant": "test-hang"}, "limits": {"request_timeout_s": 0.3}}
                )
            )
            t0 = time.perf_counter()
            with pytest.raises(WatchdogError, match="request_timeout_s") as err:
                run_point(points[0])
            assert "a worker hangs in variant 'test-hang' (" in str(err.value)
            assert time.perf_counter() - t0 < 8
        finally:
            _Hang.release.set()


def test_the_watchdog_keeps_no_timer_per_request(write_config, monkeypatch) -> None:
    """One watchdog process watches every request: a load leaves no timer per request."""
    from simpy.events import Timeout

    cfg = {"workload": {"requests": 30}, "limits": {"request_timeout_s": 77.0}}
    _, points = parse_config(write_config(cfg))
    timers: list[float] = []

    def counting(self, delay=0, value=None):  # type: ignore[no-untyped-def]
        timers.append(delay)
        return Timeout(self, delay, value)

    # monkeypatch removes the class attribute afterwards (SimPy's descriptor is inherited)
    monkeypatch.setattr(HybridEnvironment, "timeout", counting)
    res = run_point(points[0])
    assert res.summary["ok"] == 30
    # Every other timer of this load is well under a second; the watchdog's sleep until
    # the oldest request's deadline is a few, not one per request.
    watchdog_timers = [d for d in timers if d > 10.0]
    assert 1 <= len(watchdog_timers) <= 3, watchdog_timers


class _CountingClock(SimpyClock):
    """Counts the timers the store asks for."""

    def __init__(self, env: simpy.Environment) -> None:
        super().__init__(env)
        self.timers = 0

    def after(self, delay, fn, arg=None):  # type: ignore[no-untyped-def]
        self.timers += 1
        return super().after(delay, fn, arg)


def test_a_transfer_alone_costs_one_timer_for_its_latency_and_its_bytes() -> None:
    env = simpy.Environment()
    clock = _CountingClock(env)
    store = StoreModel(clock, StoreConfig(bandwidth_gb_per_s=10, latency_ms=2, concurrency=4))
    ends: list[float] = []
    store.transfer(10**8, None, lambda _out: ends.append(env.now))
    env.run()
    assert ends == [pytest.approx(0.002 + 0.01)]
    assert clock.timers == 1
    # A second transfer joining during the first one's latency shares the link from its
    # own start: 1e8 bytes at 10 GB/s from 2 ms; the second (5e7) joins at 3 ms.
    env = simpy.Environment()
    store = StoreModel(SimpyClock(env), StoreConfig(bandwidth_gb_per_s=10, latency_ms=2))
    ends = [math.nan, math.nan]
    store.transfer(10**8, None, lambda _o: ends.__setitem__(0, env.now))
    env.run(until=0.001)
    store.transfer(5 * 10**7, None, lambda _o: ends.__setitem__(1, env.now))
    env.run()
    # 2-3 ms: the first alone moves 1e7; then both at 5 GB/s: the second's 5e7 takes 10 ms
    # (ends at 13 ms), the first has 4e7 left, alone again: 4 ms more.
    assert ends == [pytest.approx(0.017), pytest.approx(0.013)]
