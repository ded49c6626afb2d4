"""The run-delay read keeps the GIL (sim.instruments.schedstat): a read that handed it over
let a waiting thread in at each job's start and end, and at each probe wake-up."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from sim.instruments.gilmeter import measure
from sim.instruments.schedstat import run_delay_ns

pytestmark = pytest.mark.skipif(
    run_delay_ns() is None, reason="no per-thread schedstat here (Linux /proc only)"
)


@pytest.fixture
def long_switch_interval() -> Iterator[None]:
    """A waiting thread gets the GIL only when the holder releases it: no forced switch."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _let_in_during(call: Callable[[], object], budget_s: float) -> bool:
    """Whether a thread waiting for the GIL ran while this one made ``call`` over and over
    (for ``budget_s``, or until it ran)."""
    gate = threading.Lock()
    gate.acquire()
    ran = threading.Event()

    def waiter() -> None:
        gate.acquire()  # woken in C by the release below; then it wants the GIL
        ran.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.01)  # the waiter blocks on the gate
    gate.release()
    end = time.perf_counter() + budget_s
    while time.perf_counter() < end and not ran.is_set():
        call()
    got_in = ran.is_set()
    thread.join()  # the join releases the GIL: the waiter ends
    return got_in


def test_the_read_keeps_the_gil(long_switch_interval: None) -> None:
    assert not _let_in_during(run_delay_ns, 0.05)


def test_the_check_sees_a_read_that_hands_the_gil_over(long_switch_interval: None) -> None:
    """The same check catches ``os.pread``, which releases the GIL around the system call."""
    fd = os.open(f"/proc/self/task/{threading.get_native_id()}/schedstat", os.O_RDONLY)
    try:
        assert _let_in_during(lambda: os.pread(fd, 128, 0), 5.0)
    finally:
        os.close(fd)


def test_each_thread_reads_its_own_run_delay() -> None:
    got: list[int | None] = []
    thread = threading.Thread(target=lambda: got.append(run_delay_ns()))
    thread.start()
    thread.join()
    mine = run_delay_ns()
    assert got[0] is not None and mine is not None
    assert got[0] >= 0 and mine >= 0
    assert run_delay_ns() >= mine  # a running total


def test_a_job_records_its_core_wait_with_the_gil_on() -> None:
    _, error, timing = measure(sum, range(1000))
    assert error is None
    assert timing.run_wait_ns is not None and 0 <= timing.run_wait_ns <= timing.wall_ns
