"""CPython 3.11's hand-off rules (Python/ceval_gil.c) that the simulated GIL keeps (issue 40).

Each test pins one rule on a small deterministic scenario: the timed wait that wakes
late, the round that sees a hand-off and does not drop, FORCE_SWITCHING's wait for
the woken thread (no livelock when the wake-up is longer than the interval), and the
1 µs floor of the interval. The threads are callbacks on the model's loop.
"""

from __future__ import annotations

import random

import pytest

from sim.model.cores import Cores
from sim.model.gil import CPythonGil
from sim.model.loop import Loop


def _gil(si_s: float, late_s: float = 0.0, handoff_s: float = 0.0, cores: int = 4):
    loop = Loop()
    gil = CPythonGil(loop, Cores(loop, cores), si_s, random.Random(1).random, handoff_s, late_s)
    return loop, gil


def _cpu(loop: Loop, gil: CPythonGil, name: str, work_s: float, ends: dict[str, float]):
    """A thread that takes the GIL, runs ``work_s`` of Python, lets it go; notes its end."""

    def got(_a=None) -> None:
        gil.run(name, work_s, done)

    def done(_a=None) -> None:
        gil.release(name)
        ends[name] = loop.now

    return lambda _a=None: gil.acquire(name, got)


def test_the_drop_request_comes_a_timed_waits_lateness_after_the_interval() -> None:
    """A waiter's timed wait wakes ``late`` after the interval: only then the holder drops."""
    loop, gil = _gil(0.005, late_s=0.0002)
    ends: dict[str, float] = {}
    taken: dict[str, float] = {}
    loop.after(0.0, _cpu(loop, gil, "holder", 0.050, ends))

    def waiter(_a=None) -> None:
        gil.acquire("waiter", lambda _b=None: taken.setdefault("waiter", loop.now))

    loop.after(0.001, waiter)
    loop.run(until=0.010)
    assert taken["waiter"] == pytest.approx(0.001 + 0.005 + 0.0002)
    assert gil.forced_drops == 1


def test_a_hold_just_over_the_interval_ends_before_a_late_timed_wait_forces_it() -> None:
    """The issue-40 class: holds of 5.05 ms at a 5 ms interval. A thread that began
    waiting as the holder started sees it end before its timed wait wakes (5 ms + the
    timer's lateness), so nothing is forced; without the lateness both holds were."""
    for late, forced in ((0.0001, 0), (0.0, 2)):
        loop, gil = _gil(0.005, late_s=late)
        ends: dict[str, float] = {}
        loop.after(0.0, _cpu(loop, gil, "a", 0.00505, ends))
        loop.after(0.0, _cpu(loop, gil, "b", 0.00505, ends))
        loop.run()
        assert gil.forced_drops == forced, late
        assert max(ends.values()) == pytest.approx(0.0101)


def test_a_round_that_saw_a_hand_off_does_not_drop() -> None:
    """switch_number: a waiter whose round saw the GIL change hands waits a round more.

    c waits from 1 ms behind a (5 ms of work); a lets go at 3 ms to b, which holds for
    10 ms. c's first round (1-6 ms) saw that hand-off, so c asks for the GIL only at the
    end of its second round (11 ms), not at 6 ms."""
    loop, gil = _gil(0.005)
    ends: dict[str, float] = {}
    taken: dict[str, float] = {}
    loop.after(0.0, _cpu(loop, gil, "a", 0.003, ends))
    loop.after(0.0005, _cpu(loop, gil, "b", 0.010, ends))

    def c(_a=None) -> None:
        gil.acquire("c", lambda _b=None: taken.setdefault("c", loop.now))

    loop.after(0.001, c)
    loop.run(until=0.05)
    assert ends["a"] == pytest.approx(0.003)
    assert taken["c"] == pytest.approx(0.011)


def test_the_thread_forced_off_waits_for_the_woken_one_before_its_own_timed_wait() -> None:
    """FORCE_SWITCHING: the holder forced off at t waits until the woken thread has the
    GIL (t + its wake-up) and is woken itself (+ one more), and only then starts its
    round: it asks for the GIL back at t + 2 wake-ups + the interval."""
    wake = 0.0003
    loop, gil = _gil(0.002, handoff_s=wake)
    ends: dict[str, float] = {}
    loop.after(0.0, _cpu(loop, gil, "a", 0.020, ends))
    loop.after(0.0, _cpu(loop, gil, "b", 0.020, ends))
    loop.run()
    # b asks at 2 ms and runs from 2.3 ms; a's round runs 2.6-4.6 ms, so b's turn is
    # 2.3 ms of work, and every later turn likewise: a's 2 ms, then 38 ms in turns of
    # 2.3 ms = 16 forced drops, the last turn's end unforced. Were the forced-off
    # thread's round to start at once (4.6 ms: 1.7 ms turns), 22.
    assert gil.forced_drops == 16
    assert max(ends.values()) == pytest.approx(0.040 + 17 * wake)


@pytest.mark.parametrize("b_work", [0.0005, 0.00005])
def test_a_forced_hand_off_its_return_and_a_release_each_take_their_own_latency(b_work) -> None:
    """calibrate times three hand-offs apart (sim.calibration.measure_handoff): a forced
    one (F: the holder's drop to the waiter's first bytecode), FORCE_SWITCHING's return to
    the thread forced off (B, from the waiter's take) and a release to a waiting thread
    (W). a holds 10 ms of work; b asks at 1 ms, so a is forced off at 3 ms and b runs from
    3 ms + F. a calls take_gil at 3 ms + F + B: behind b's 0.5 ms it waits and gets the GIL
    W after b's release; b's 0.05 ms is over by then and a takes the free GIL at once."""
    forced, back, release = 0.0003, 0.0002, 0.0004
    loop = Loop()
    gil = CPythonGil(
        loop, Cores(loop, 4), 0.002, random.Random(1).random, release, 0.0, forced, back
    )
    ends: dict[str, float] = {}
    taken: dict[str, float] = {}
    loop.after(0.0, _cpu(loop, gil, "a", 0.010, ends))

    def b(_a=None) -> None:
        def got(_b=None) -> None:
            taken["b"] = loop.now
            gil.run("b", b_work, lambda _c=None: gil.release("b"))

        gil.acquire("b", got)

    loop.after(0.001, b)
    loop.run()
    assert gil.forced_drops == 1
    assert taken["b"] == pytest.approx(0.003 + forced)
    a_back = 0.003 + forced + (b_work + release if b_work > back else back)
    assert ends["a"] == pytest.approx(a_back + 0.007)


def test_without_its_own_latencies_every_hand_off_takes_the_release_one() -> None:
    """A calibration from before the hand-offs were timed gives only the queue wake-up:
    the GIL draws every hand-off from it, as it did then."""
    loop, gil = _gil(0.002, handoff_s=0.0003)
    ends: dict[str, float] = {}
    taken: dict[str, float] = {}
    loop.after(0.0, _cpu(loop, gil, "a", 0.010, ends))
    loop.after(
        0.001, lambda _a=None: gil.acquire("b", lambda _b=None: taken.setdefault("b", loop.now))
    )
    loop.run(until=0.02)
    assert taken["b"] == pytest.approx(0.003 + 0.0003)


@pytest.mark.timeout(60)
def test_no_livelock_when_the_wake_up_is_longer_than_the_interval() -> None:
    """At gil.switch_interval_ms 0.02 with wake-ups of 50 µs, a forced-off thread used to
    ask for the GIL back before the woken one ran, so no work was done between hand-offs
    and a point of 20 requests never ended (issue 43). Now each holder runs a whole
    round between hand-offs: 2 ms of work take a bounded number of them."""
    loop, gil = _gil(20e-6, handoff_s=50e-6, late_s=0.0)
    ends: dict[str, float] = {}
    loop.after(0.0, _cpu(loop, gil, "a", 0.002, ends))
    loop.after(0.0, _cpu(loop, gil, "b", 0.002, ends))
    loop.run(until=1.0)
    assert set(ends) == {"a", "b"}
    # each turn: at least one interval of work after a 50 µs wake-up; 4 ms of work in all
    assert gil.switches <= 0.004 / 20e-6 + 2
    assert max(ends.values()) < 0.004 + gil.switches * 50e-6 + 1e-9


def test_the_interval_is_at_least_one_microsecond_as_in_take_gil() -> None:
    loop, gil = _gil(1e-12)
    ends: dict[str, float] = {}
    loop.after(0.0, _cpu(loop, gil, "a", 0.0001, ends))
    loop.after(0.0, _cpu(loop, gil, "b", 0.0001, ends))
    loop.run(until=1.0)
    assert set(ends) == {"a", "b"}
    assert 100 <= gil.forced_drops <= 200  # 1 µs turns over 200 µs of work


def _workers(gap_s: float, late_s: float):
    """Two load threads on one GIL (5 ms interval, timed waits ``late_s`` late) given a
    job each at once: a 5.04 ms hold, then a 1 ms sleep without the GIL; the thread's
    GIL-held work before a job ``gap_s``. The second thread waits from the first's start."""
    from sim.model.threads import Harness, ModelJob, ModelWorkers

    loop, gil = _gil(0.005, late_s=late_s)
    zero = float  # every draw 0: no wake-up, no lateness but the timed wait's
    pool = ModelWorkers(loop, gil, gil.cores, Harness(loop, gil), 2, zero, zero, 0.0, zero, gap_s)
    pool.start()
    jobs = [ModelJob(0.00504, 0.0, 0.001, lambda j: None) for _ in range(2)]
    for job in jobs:
        pool.submit(job)
    loop.run(until=1.0)
    return gil, jobs


def test_the_gil_held_gap_between_jobs_decides_a_waiter_that_began_as_the_job_began() -> None:
    """A thread that finds the GIL held as the other's job begins asks for it an interval
    and a timed wait's lateness later: a 5.04 ms hold ends first, so nothing is forced; a
    30 µs gap between jobs (real mode's post, get and meter set-up, not in the measured
    hold) pushes the job's end past the request, and the job is forced off at its end."""
    gil, jobs = _workers(0.0, 61e-6)
    assert gil.forced_drops == 0
    assert jobs[1].start == pytest.approx(0.00504)  # taken as the first went to sleep
    gil, jobs = _workers(30e-6, 61e-6)
    # The first job is forced off at 5.061 ms, 9 µs before its end; the thread forced
    # off asks again an interval later (FORCE_SWITCHING: its round starts as the other
    # took the GIL), 9 µs before the second job's end: forced too. Each then waited
    # a whole hold for its last 9 µs.
    assert gil.forced_drops == 2
    # the start is stamped after the gap, as real mode's meter stamps it
    assert jobs[0].start == pytest.approx(30e-6)
    assert jobs[1].start == pytest.approx(0.005061 + 30e-6)
    assert jobs[0].end - jobs[0].start == pytest.approx(2 * 0.005061 - 30e-6 + 9e-6 + 0.001)


def test_a_thread_that_calls_take_gil_while_the_woken_waiter_wakes_takes_it_first() -> None:
    """Barging: drop_gil leaves the GIL free until the woken waiter runs. A thread that
    asks in that window (back from a sleep, say) takes it at once; the woken one finds
    it held and begins a new round, its drop request an interval after it woke."""
    wake = 0.0002
    loop, gil = _gil(0.005, handoff_s=wake)
    ends: dict[str, float] = {}
    taken: dict[str, float] = {}
    loop.after(0.0, _cpu(loop, gil, "a", 0.002, ends))

    def want(name: str, work_s: float):
        def got(_b=None) -> None:
            taken[name] = loop.now
            gil.run(name, work_s, lambda _c=None: gil.release(name))

        return lambda _a=None: gil.acquire(name, got)

    loop.after(0.001, want("b", 0.001))  # waits behind a, woken as a lets go at 2 ms
    loop.after(0.002 + wake / 2, want("c", 0.010))  # asks while b is waking
    loop.run(until=0.05)
    assert taken["c"] == pytest.approx(0.002 + wake / 2)  # at once, ahead of b
    # b woke at 2.2 ms to a held GIL: a new round, its drop request at 7.2 ms
    assert taken["b"] == pytest.approx(0.002 + wake + 0.005 + wake)
    assert gil.forced_drops == 1


def test_a_waiter_whose_timed_wait_runs_out_on_a_free_gil_takes_it() -> None:
    """take_gil's loop: a timed wait that ends while the GIL is free (its woken waiter
    not running yet) finds it unlocked and takes it, ahead of the woken one."""
    wake = 0.0005
    loop, gil = _gil(0.005, handoff_s=wake)
    ends: dict[str, float] = {}
    taken: dict[str, float] = {}
    loop.after(0.0, _cpu(loop, gil, "a", 0.0052, ends))  # ends 0.2 ms past b's interval...

    def want(name: str):
        return lambda _a=None: gil.acquire(name, lambda _b=None: taken.setdefault(name, loop.now))

    loop.after(0.0, want("b"))  # ...so b's drop request at 5 ms forces a off: b is woken
    loop.after(0.0002, want("c"))  # c's round ends at 5.2 ms, while b (woken at 5.0) wakes
    loop.run(until=0.003 + 0.005)
    assert taken["c"] == pytest.approx(0.0052)
    assert "b" not in taken  # b woke at 5.5 ms to a held GIL: it waits on


def test_the_simulation_threads_own_next_step_due_now_is_done_in_the_same_wake_up() -> None:
    """Real mode's event loop runs every event already due before it sleeps, so a backlog
    of hand-overs goes over in one wake-up, holding the GIL (sim.runtime.run_clock:
    ``inline_due``). Model mode posts each hand-over as the thread's work of its own: with
    ``own`` its next step runs before the thread moves on, so one due then is done at once;
    without (another thread's continuation, as before) the thread lets the GIL go, sleeps
    and is woken a timer's lateness later for it (issue 40: that wake-up asked for the GIL
    just after a load thread had taken it, and forced its hold off at the very end)."""
    from sim.model.threads import Harness

    late = 100e-6  # the thread's wake-up when asleep

    def backlog(own: bool) -> tuple[list[float], int]:
        loop, gil = _gil(0.005)
        harness = Harness(loop, gil)
        done_at: list[float] = []

        def step(k: int) -> None:  # a hand-over, then the next one, already due
            done_at.append(loop.now)
            if k < 3:
                harness.post(20e-6, lambda: late, step, k + 1, own=own)

        harness.post(20e-6, lambda: late, step, 0, own=own)
        loop.run(until=1.0)
        return done_at, gil.switches

    at, takes = backlog(own=True)
    assert at == pytest.approx([late + 20e-6 * (k + 1) for k in range(4)])  # back to back
    assert takes == 1  # the GIL taken once for the whole backlog
    at, takes = backlog(own=False)
    assert at == pytest.approx([(late + 20e-6) * (k + 1) for k in range(4)])  # a wake-up each
    assert takes == 4
