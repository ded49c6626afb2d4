"""HybridEnvironment: wall-clock pacing, completions from threads, failures, no hangs."""

from __future__ import annotations

import threading
import time

import pytest

from sim.runtime.env import HybridEnvironment, StallError
from sim.store.clock import QUIET_SLACK_S

pytestmark = pytest.mark.timeout(30)


def test_timers_fire_in_order_and_not_before_their_time() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    seen: list[tuple[str, float, float]] = []

    def proc(name: str, delay: float):
        yield env.timeout(delay)
        seen.append((name, env.now, env.wall()))

    for name, delay in [("c", 0.03), ("a", 0.01), ("b", 0.02)]:
        env.process(proc(name, delay))
    env.run()
    assert [s[0] for s in seen] == ["a", "b", "c"]
    for _name, now, wall in seen:
        assert wall >= now - 1e-4  # never ahead of the wall clock
    assert [s[1] for s in seen] == sorted(s[1] for s in seen)


def test_thread_completion_wakes_the_loop_before_an_unrelated_timer() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    got: dict[str, float] = {}

    def waiter():
        ev = env.external_event()
        threading.Thread(target=lambda: (time.sleep(0.02), env.complete(ev, True, "v"))).start()
        value = yield ev
        got["value"] = value
        got["at"] = env.wall()

    def far_timer():
        yield env.timeout(2.0)

    env.process(waiter())
    env.process(far_timer())
    env.run(until=1.0)
    assert got["value"] == "v"
    assert got["at"] < 0.5  # woke on the inbox, not on the 2 s timer


def test_completion_with_no_timer_pending_does_not_stall() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    out = []

    def proc():
        for i in range(20):
            ev = env.external_event()
            threading.Thread(target=env.complete, args=(ev, True, i)).start()
            out.append((yield ev))

    env.process(proc())
    t0 = time.perf_counter()
    env.run()
    assert out == list(range(20))
    assert time.perf_counter() - t0 < 5


def test_failed_event_raises_in_the_waiting_process_only() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    caught = []

    def proc():
        ev = env.external_event()
        threading.Thread(target=env.complete, args=(ev, False, ValueError("boom"))).start()
        try:
            yield ev
        except ValueError as exc:
            caught.append(str(exc))
        yield env.timeout(0.001)

    env.process(proc())
    env.run()
    assert caught == ["boom"]
    assert env.pending == 0


def test_lost_job_raises_stall_error_instead_of_hanging() -> None:
    env = HybridEnvironment(stall_timeout_s=0.2)

    def proc():
        yield env.external_event()  # nobody will ever complete it

    env.process(proc())
    t0 = time.perf_counter()
    with pytest.raises(StallError, match="no answer"):
        env.run()
    assert time.perf_counter() - t0 < 3


def test_clock_never_goes_backwards_when_behind() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    stamps: list[float] = []

    def busy():
        yield env.timeout(0.001)
        time.sleep(0.05)  # the simulation thread falls behind
        stamps.append(env.now)

    def completer():
        ev = env.external_event()
        env.complete(ev, True, None)
        yield ev
        stamps.append(env.now)

    def later():
        yield env.timeout(0.01)
        stamps.append(env.now)

    for p in (busy, completer, later):
        env.process(p())
    env.run()
    assert stamps == sorted(stamps)


def test_run_until_a_time_stops_there_and_not_before_the_wall_clock() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    ticks: list[float] = []

    def ticker():
        while True:
            yield env.timeout(0.01)
            ticks.append(env.now)

    env.process(ticker())
    env.run(until=0.055)
    assert env.now == pytest.approx(0.055)
    assert env.wall() >= 0.055  # not ahead of the wall clock
    assert ticks == pytest.approx([0.01, 0.02, 0.03, 0.04, 0.05])
    env.run(until=0.075)  # and it resumes where it stopped
    assert ticks == pytest.approx([0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07])


def test_a_late_completion_never_moves_the_clock_past_an_overdue_timer() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    seen: list[tuple[str, float]] = []

    def timer():
        yield env.timeout(0.001)
        seen.append(("timer", env.now))

    def waiter():
        ev = env.external_event()
        env.complete(ev, True, None)  # already in the inbox when the timer is overdue
        yield ev
        seen.append(("done", env.now))

    env.process(timer())
    env.process(waiter())
    time.sleep(0.02)  # both overdue when the loop runs
    env.run()
    times = [t for _, t in seen]
    assert times == sorted(times)
    assert dict(seen)["timer"] == pytest.approx(0.001)


def test_origin_moves_run_time_not_the_clock() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    time.sleep(0.01)
    at = env.set_origin()
    assert at >= 0.01
    assert env.to_run_time(env.origin_ns) == 0.0
    assert env.to_run_time(env.t0_ns) == pytest.approx(-at)


def test_callbacks_run_in_time_order_with_simpy_events_and_a_cancelled_one_never() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    seen: list[str] = []

    env.timeout(0.02).callbacks.append(lambda _ev: seen.append("simpy timeout"))
    env.after(0.03, seen.append, "late")
    env.after(0.01, seen.append, "early")
    env.after(0.02, seen.append, "same time, asked later")
    stale = env.after(30.0, seen.append, "cancelled")
    stale.cancel()
    t0 = time.perf_counter()
    env.run()
    # A cancelled call at the head of the queue is dropped, not waited for (30 s here).
    assert time.perf_counter() - t0 < 10.0
    assert seen == ["early", "simpy timeout", "same time, asked later", "late"]


def test_a_posted_callback_runs_on_the_simulation_thread() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    ran_on: list[str] = []
    env.expect()
    worker = threading.Thread(
        target=lambda: env.post(lambda _a: ran_on.append(threading.current_thread().name), None),
        name="poster",
    )
    worker.start()
    env.run()
    worker.join()
    assert ran_on == [threading.current_thread().name]
    assert env.pending == 0


def test_the_inbox_wakes_its_waiter_loses_no_post_and_times_out() -> None:
    from sim.runtime.inbox import Inbox

    inbox: Inbox[int] = Inbox()
    t0 = time.perf_counter()
    assert inbox.wait(0.02) is False and not inbox  # nothing posted: it times out
    assert time.perf_counter() - t0 >= 0.015
    assert inbox.wait(-1.0) is False  # a time already past: no wait, never a hang
    n, producers = 2000, 4
    got: list[int] = []

    def produce(k: int) -> None:
        for i in range(n):
            inbox.put(k * n + i)

    threads = [threading.Thread(target=produce, args=(k,)) for k in range(producers)]
    for t in threads:
        t.start()
    deadline = time.perf_counter() + 20
    while len(got) < n * producers and time.perf_counter() < deadline:
        while inbox:
            got.append(inbox.take())
        inbox.wait(0.00003)  # tiny waits, as the simulation thread's timers make
    for t in threads:
        t.join()
    assert sorted(got) == list(range(n * producers))  # every post, once


# -- quiet calls: a modelled transfer's end, which nothing on the wall clock waits for --


def test_a_quiet_call_runs_at_its_own_time_in_the_wake_up_of_a_later_timer() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    seen: list[tuple[str, float, float]] = []
    env.after_quietly(0.004, lambda _a: seen.append(("quiet", env.now, env.wall())))
    env.after(0.010, lambda _a: seen.append(("timer", env.now, env.wall())))
    env.run()
    assert [s[0] for s in seen] == ["quiet", "timer"]
    quiet, timer = seen
    assert quiet[1] == pytest.approx(0.004, abs=1e-12)  # ``now`` is its own time...
    # ...but the thread did not wake for it: it ran once awake for the timer (due before
    # its slack is over), which a loaded machine can only make later still.
    assert 0.004 + QUIET_SLACK_S > 0.010
    assert quiet[2] >= 0.010 - 1e-4
    assert timer[1] == pytest.approx(0.010, abs=1e-12)


def test_a_lone_quiet_call_runs_once_its_slack_is_over_and_the_run_ends() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    seen: list[tuple[float, float]] = []
    env.after_quietly(0.002, lambda _a: seen.append((env.now, env.wall())))
    env.run()  # returns: a quiet call is not lost, nor waited for forever
    assert len(seen) == 1
    now, wall = seen[0]
    assert now == pytest.approx(0.002, abs=1e-12)
    assert wall >= 0.002 + QUIET_SLACK_S - 1e-4  # not woken at its time


def test_a_cancelled_quiet_call_never_runs_and_is_not_waited_for() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    seen: list[str] = []
    env.after_quietly(30.0, seen.append, "cancelled").cancel()
    t0 = time.perf_counter()
    env.run()
    assert seen == [] and time.perf_counter() - t0 < 10.0


def test_an_overdue_quiet_call_runs_before_a_completion_and_the_clock_never_goes_back() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    seen: list[tuple[str, float]] = []
    env.after_quietly(0.001, lambda _a: seen.append(("quiet", env.now)))
    env.expect()
    env.post(lambda _a: seen.append(("posted", env.now)), None)
    time.sleep(0.005)  # the quiet call is overdue and the post waiting when the loop runs
    env.run()
    assert [s[0] for s in seen] == ["quiet", "posted"]
    assert seen[0][1] == pytest.approx(0.001, abs=1e-12)
    assert seen[1][1] >= seen[0][1]


# -- answers posted at their own time: a load thread's work ends, what follows starts then --


def test_an_answer_posted_at_its_time_runs_at_that_time_in_order() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    seen: list[tuple[str, float]] = []
    env.after_quietly(0.001, lambda _a: seen.append(("quiet", env.now)))
    env.after(0.5, lambda _a: seen.append(("timer", env.now)))  # far: a late poster is in time
    env.expect()
    # a load thread that finished at 2 ms and got round to posting at 4 ms
    at_ns = env.t0_ns + 2_000_000
    poster = threading.Timer(
        0.004, env.post_at, (lambda _a: seen.append(("answer", env.now)), None, at_ns)
    )
    poster.start()
    env.run()
    poster.join()
    assert [s[0] for s in seen] == ["quiet", "answer", "timer"]
    assert [s[1] for s in seen] == pytest.approx([0.001, 0.002, 0.5], abs=1e-9)
    assert env.pending == 0


def test_a_lone_answer_earlier_than_the_queue_runs_first_and_a_tie_keeps_the_queue_first() -> None:
    """A lone answer earlier than every queued entry runs at its time without being filed
    among the quiet calls; one at the time of a queued call runs after it, as when filed
    (its id is later)."""
    env = HybridEnvironment(stall_timeout_s=5)
    seen: list[tuple[str, float]] = []
    filed: list[float] = []
    push_quiet = env._push_quiet
    env._push_quiet = lambda at, fn, arg: filed.append(at) or push_quiet(at, fn, arg)  # type: ignore[method-assign]
    env.at(0.003, lambda _a: seen.append(("timer", env.now)))
    env.expect()
    env.post_at(lambda _a: seen.append(("answer", env.now)), None, env.t0_ns + 1_000_000)
    time.sleep(0.004)
    env.step()
    assert filed == []  # run at once, never filed among the quiet calls
    assert seen == [("answer", pytest.approx(0.001, abs=1e-9)), ("timer", 0.003)]
    assert env.pending == 0

    env = HybridEnvironment(stall_timeout_s=5)
    seen.clear()
    env.after_quietly(0.002, lambda _a: seen.append(("quiet", env.now)))
    env.expect()
    env.post_at(lambda _a: seen.append(("answer", env.now)), None, env.t0_ns + 2_000_000)
    time.sleep(0.003)
    env.step()
    assert [s[0] for s in seen] == ["quiet", "answer"]
    assert [s[1] for s in seen] == pytest.approx([0.002, 0.002], abs=1e-9)


def test_an_answer_posted_at_its_time_wakes_a_long_sleep_and_not_a_short_one() -> None:
    env = HybridEnvironment(stall_timeout_s=5)
    got: list[float] = []
    env.after(30.0, lambda _a: got.append(-1.0))  # the thread would sleep 30 s
    env.expect()
    threading.Timer(0.01, lambda: env.post_at(got.append, 0.0, time.perf_counter_ns())).start()
    t0 = time.perf_counter()
    while not got:
        env.step()
    assert time.perf_counter() - t0 < 10.0  # rung: it did not sleep the 30 s

    # The rule itself: ring only a thread that would sleep past the slack.
    env = HybridEnvironment(stall_timeout_s=5)
    env._wake_ns = time.perf_counter_ns()  # asleep, due to wake now: left alone
    env.post_at(got.append, 2.0, time.perf_counter_ns())
    assert env._inbox.wait(0) is False
    env._wake_ns = time.perf_counter_ns() + 10**10  # asleep for 10 s more: rung
    env.post_at(got.append, 3.0, time.perf_counter_ns())
    assert env._inbox.wait(0) is True
