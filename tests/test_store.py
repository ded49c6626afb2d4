"""The modelled store: transfer time, injected faults, retries, seeded fault draws."""

from __future__ import annotations

import threading
import time

import pytest

from connectors.base import AddressVariant
from connectors.registry import ADDRESS_VARIANTS
from sim.config import StoreConfig, parse_config
from sim.runtime.env import HybridEnvironment
from sim.runtime.pipeline import WatchdogError
from sim.runtime.point import run_point
from sim.store.model import StoreModel

pytestmark = pytest.mark.realthreads


def test_transfer_time_is_latency_plus_bytes_over_bandwidth() -> None:
    env = HybridEnvironment()
    store = StoreModel(env, StoreConfig(bandwidth_gbps=10, latency_ms=2, concurrency=1))
    assert store.transfer_time_s(10**9) == pytest.approx(0.002 + 0.1)


def test_concurrency_limits_transfers_in_flight() -> None:
    env = HybridEnvironment()
    store = StoreModel(env, StoreConfig(bandwidth_gbps=1, latency_ms=20, concurrency=2))
    ends: list[float] = []

    def one():
        out = yield from store.transfer(0)
        ends.append(env.now)
        return out

    for _ in range(4):
        env.process(one())
    env.run()
    assert ends[:2] == pytest.approx([0.02, 0.02], abs=0.01)
    assert ends[2:] == pytest.approx([0.04, 0.04], abs=0.01)


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
            with pytest.raises(WatchdogError, match="request_timeout_s"):
                run_point(points[0])
            assert time.perf_counter() - t0 < 8
        finally:
            _Hang.release.set()
