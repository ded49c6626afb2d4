"""The GIL meter: hold = thread CPU - GIL-free CPU; wait = wall - hold - GIL-free wall.

The accuracy matrix runs the synthetic variant, whose hold is known, on the real
worker pool: the hold it measures must match ``hold_ms`` whatever the contention,
since thread CPU time stops while a thread waits for the GIL.
"""

from __future__ import annotations

import hashlib
import statistics
import threading
import time

import pytest

from connectors.address_synthetic import SyntheticOptions, SyntheticVariant
from connectors.base import LoadJob, gil_free
from connectors.token_database import TokenDatabase
from sim.instruments import gilmeter
from sim.instruments.gilmeter import JobTiming, close_ledger, measure, open_ledger
from sim.instruments.probe import run_delay_ns
from sim.runtime.env import HybridEnvironment
from sim.runtime.pipeline import cpu_stages
from sim.runtime.workers import JobOutcome, WorkerPool

DB = TokenDatabase(kv_caches_base_addr=(0,), block_len=(4096,), block_size=128, hash_block_size=128)


def _job(i: int = 0, draw: float = 0.5) -> LoadJob:
    return LoadJob(i, 128, b"", ([0],), draw=draw)


def _run_pool(variant: SyntheticVariant, workers: int, requests: int) -> list[JobOutcome]:
    """Submit every request at once to ``workers`` real threads; outcomes in request order."""
    env = HybridEnvironment(stall_timeout_s=60.0)
    outcomes: list[JobOutcome] = []

    def driver():
        events = [pool.submit(cpu_stages, [variant], "per_group", _job(i)) for i in range(requests)]
        for ev in events:
            outcomes.append((yield ev))

    pool = WorkerPool(env, workers, name="test-meter")
    with pool:
        env.process(driver())
        env.run()
    return outcomes


def _synthetic(**opts: object) -> SyntheticVariant:
    v = SyntheticVariant(DB, SyntheticOptions.model_validate(opts))
    v.warm_up()
    return v


def test_timing_arithmetic() -> None:
    t = JobTiming(start_ns=0, end_ns=100, cpu_ns=50, free_cpu_ns=20, free_wall_ns=40)
    assert t.wall_ns == 100
    assert t.hold_ns == 30
    assert t.wait_ns == 100 - 30 - 40
    assert t.hold_ns + t.wait_ns + t.free_wall_ns == t.wall_ns


def test_timing_never_negative() -> None:
    # clock granularity can make a GIL-free section look longer than the job
    t = JobTiming(start_ns=0, end_ns=10, cpu_ns=5, free_cpu_ns=7, free_wall_ns=20)
    assert t.hold_ns == 0
    assert t.wait_ns == 0


def test_measure_returns_result_and_catches_errors() -> None:
    result, error, timing = measure(lambda a, b: a + b, 2, 3)
    assert (result, error) == (5, None)
    assert timing.end_ns >= timing.start_ns

    def boom() -> None:
        raise ValueError("bad chunk")

    result, error, _ = measure(boom)
    assert result is None
    assert isinstance(error, ValueError)


def test_measure_resets_free_time_between_jobs() -> None:
    def free_sleep() -> None:
        with gil_free():
            time.sleep(0.01)

    _, _, first = measure(free_sleep)
    _, _, second = measure(lambda: None)
    assert first.free_wall_ns >= 10_000_000
    assert second.free_wall_ns == 0
    assert second.free_cpu_ns == 0


def test_gil_free_sleep_is_neither_hold_nor_wait() -> None:
    def job() -> None:
        with gil_free():
            time.sleep(0.02)

    tid = threading.get_native_id()
    delay0 = run_delay_ns(tid)
    _, _, t = measure(job)
    delay1 = run_delay_ns(tid)
    # Time this thread spent runnable but off-core (a loaded machine): wait, not sleep.
    offcore = delay1 - delay0 if delay0 is not None and delay1 is not None else 0
    assert t.free_wall_ns >= 20_000_000
    assert t.hold_ns < t.free_wall_ns / 10
    assert t.wait_ns - offcore < t.free_wall_ns / 10


def test_gil_free_cpu_is_subtracted() -> None:
    buf = bytes(8 << 20)  # hashlib releases the GIL while hashing a buffer this large

    def job() -> None:
        with gil_free():
            hashlib.sha256(buf).digest()

    _, _, t = measure(job)
    assert t.free_cpu_ns > 0
    assert t.hold_ns < t.free_cpu_ns / 5


def test_ledger_counts_only_while_open_and_from_every_thread() -> None:
    ledger = open_ledger()
    try:
        holds = [measure(lambda: sum(range(20_000)))[2].hold_ns for _ in range(3)]
        other: list[int] = []
        th = threading.Thread(target=lambda: other.append(measure(lambda: None)[2].hold_ns))
        th.start()
        th.join()
    finally:
        close_ledger(ledger)
    measure(lambda: sum(range(20_000)))  # after closing: not counted
    assert ledger.jobs == 4
    assert ledger.total_ns == sum(holds) + other[0]
    assert ledger not in gilmeter._open_ledgers
    close_ledger(ledger)  # idempotent


@pytest.mark.realthreads
@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.parametrize("hold_ms", [5.0, 20.0])
def test_hold_matches_synthetic_under_contention(hold_ms: float, workers: int) -> None:
    """The hold is hold_ms ± max(10 %, 0.5 ms) (median), alone or behind 3 others, and
    never less than the spin: contention does not shrink or inflate it."""
    requests = 8
    outcomes = _run_pool(_synthetic(hold_ms=hold_ms), workers, requests)
    assert all(o.ok for o in outcomes)
    holds = [o.timing.hold_ns / 1e6 for o in outcomes]
    tol = max(0.1 * hold_ms, 0.5)
    # One request may take a collection or the kernel's accounting of a wake-up on top
    # of its spin (seen once: 22.3 ms of 20 on a loaded CI machine); the median may not.
    assert abs(statistics.median(holds) - hold_ms) <= tol, holds
    assert all(h >= hold_ms - 0.5 for h in holds), holds
    if workers > 1:
        # the requests really did contend: wall time is well above the hold,
        # and the difference is reported as wait, not hold
        walls = [o.timing.wall_ns / 1e6 for o in outcomes]
        assert statistics.mean(walls) > 1.5 * hold_ms
        waits = [o.timing.wait_ns / 1e6 for o in outcomes]
        assert statistics.mean(waits) > 0.5 * hold_ms


@pytest.mark.realthreads
@pytest.mark.parametrize("free_kind", ["sleep", "kernel"])
def test_gil_free_time_not_counted(free_kind: str) -> None:
    hold_ms, free_ms = 5.0, 15.0
    outcomes = _run_pool(_synthetic(hold_ms=hold_ms, free_ms=free_ms, free_kind=free_kind), 2, 6)
    for o in outcomes:
        t = o.timing
        # At least the spin; never the GIL-free part (a loaded machine adds CPU for
        # CPython's timed waits for the GIL, which the thread clock counts as hold).
        assert hold_ms - 0.5 <= t.hold_ns / 1e6 < hold_ms + 0.5 * free_ms, t
        assert t.wall_ns / 1e6 >= hold_ms + 0.5 * free_ms
        if free_kind == "kernel":
            # the kernel burnt CPU without the GIL: counted in cpu, not in hold
            assert t.free_cpu_ns / 1e6 >= 0.3 * free_ms
        else:
            assert t.free_wall_ns / 1e6 >= free_ms


def test_ledger_keeps_sources_apart() -> None:
    """Engine steps go into the same ledger as requests but are not counted as requests."""
    ledger = open_ledger()
    try:
        req = measure(lambda: sum(range(20_000)))[2].hold_ns
        eng = measure(lambda: sum(range(40_000)), source=gilmeter.ENGINE)[2].hold_ns
    finally:
        close_ledger(ledger)
    assert (ledger.jobs, ledger.total_ns) == (1, req)
    assert ledger.jobs_of(gilmeter.ENGINE) == 1 and ledger.total_of(gilmeter.ENGINE) == eng > 0
    assert ledger.jobs_of("nothing") == 0 == ledger.total_of("nothing")
