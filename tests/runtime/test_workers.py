"""WorkerPool: real threads, FIFO order, errors as outcomes, clean shutdown."""

from __future__ import annotations

import threading
import time

import pytest

from sim.runtime.env import HybridEnvironment
from sim.runtime.workers import JobOutcome, WorkerPool

pytestmark = pytest.mark.realthreads


def _run(env: HybridEnvironment, gen) -> None:
    env.process(gen)
    env.run()


def test_single_worker_runs_jobs_in_fifo_order() -> None:
    env = HybridEnvironment(stall_timeout_s=10)
    order: list[int] = []
    outcomes: list[JobOutcome] = []

    def job(i: int) -> int:
        order.append(i)
        return i * i

    def proc():
        events = [pool.submit(job, i) for i in range(10)]
        for ev in events:
            outcomes.append((yield ev))

    with WorkerPool(env, 1) as pool:
        _run(env, proc())
    assert order == list(range(10))
    assert [o.result for o in outcomes] == [i * i for i in range(10)]
    assert all(o.ok and o.timing.end_ns >= o.timing.start_ns for o in outcomes)


def test_jobs_run_on_distinct_real_threads() -> None:
    env = HybridEnvironment(stall_timeout_s=10)
    barrier = threading.Barrier(3, timeout=5)

    def job() -> str:
        barrier.wait()  # only passes if three jobs run at the same time
        return threading.current_thread().name

    names: list[str] = []

    def proc():
        events = [pool.submit(job) for _ in range(3)]
        for ev in events:
            names.append((yield ev).result)

    with WorkerPool(env, 3) as pool:
        _run(env, proc())
    assert len(set(names)) == 3
    assert all(n.startswith("kvsim-load-") for n in names)


def test_exception_becomes_a_failed_outcome_and_the_pool_goes_on() -> None:
    env = HybridEnvironment(stall_timeout_s=10)
    results: list[JobOutcome] = []

    def job(i: int) -> int:
        if i == 1:
            raise RuntimeError("bad request")
        return i

    def proc():
        for i in range(3):
            results.append((yield pool.submit(job, i)))

    with WorkerPool(env, 2) as pool:
        _run(env, proc())
    assert [r.ok for r in results] == [True, False, True]
    assert isinstance(results[1].error, RuntimeError)


def test_hold_counts_cpu_and_not_sleep() -> None:
    env = HybridEnvironment(stall_timeout_s=10)
    out: list[JobOutcome] = []

    def spin_then_sleep() -> None:
        end = time.thread_time_ns() + 20_000_000
        while time.thread_time_ns() < end:
            pass
        time.sleep(0.05)

    def proc():
        out.append((yield pool.submit(spin_then_sleep)))

    with WorkerPool(env, 1) as pool:
        _run(env, proc())
    t = out[0].timing
    assert 18 <= t.hold_ns / 1e6 <= 30
    assert t.wall_ns / 1e6 >= 65


def test_start_and_shutdown_are_explicit() -> None:
    env = HybridEnvironment()
    pool = WorkerPool(env, 2)
    assert pool.threads == []  # the constructor starts nothing
    with pytest.raises(RuntimeError):
        pool.submit(print)
    pool.start()
    assert all(t.is_alive() for t in pool.threads)
    assert pool.shutdown() == []
    assert pool.threads == []
    with pytest.raises(ValueError):
        WorkerPool(env, 0)


def test_a_job_handed_over_ahead_starts_at_its_time_not_before() -> None:
    """run_at: the load thread that takes it sleeps until its time (the arrivals' lead,
    sim.point.arrivals); one already due starts at once."""
    env = HybridEnvironment(stall_timeout_s=10)
    outcomes: list[JobOutcome] = []
    due: list[int] = []

    def proc():
        for ahead_ms in (8.0, 3.0, -1.0):
            at_ns = time.perf_counter_ns() + round(ahead_ms * 1e6)
            due.append(at_ns)
            done = env.event()
            pool.run_at(at_ns, done.succeed, lambda: None)
            outcomes.append((yield done))

    with WorkerPool(env, 1) as pool:
        _run(env, proc())
    assert len(outcomes) == 3 and all(o.ok for o in outcomes)
    assert all(o.timing.start_ns >= at for o, at in zip(outcomes, due, strict=True))
