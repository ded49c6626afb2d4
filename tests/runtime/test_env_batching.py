"""HybridEnvironment.step runs every bare callback already due in one call: the same calls
in the same order at the same times as one event a step (the code before, kept here as
the reference), on random schedules of loud and quiet timers, cancellations, SimPy
timeouts, answers posted at their time and calls made from inside callbacks."""

from __future__ import annotations

import random
import time
from heapq import heappop
from typing import Any

import pytest
import simpy

from sim.runtime import env as env_module
from sim.runtime.env import HybridEnvironment, _Call

pytestmark = pytest.mark.timeout(60)


class _OneAStep(HybridEnvironment):
    """The step of before the batching: one event a call (the reference)."""

    def step(self) -> None:
        queue_, quiet, inbox, t0_ns = self._queue, self._quiet, self._inbox, self._t0_ns
        posted = self._posted_at
        while True:
            if posted:
                self._take_posted_at()
            while queue_ and type(head := queue_[0][3]) is _Call and not head.live:
                heappop(queue_)
            while quiet and not quiet[0][3].live:
                heappop(quiet)
            wall = (time.perf_counter_ns() - t0_ns) / 1e9
            due = queue_[0][0] if queue_ else float("inf")
            if due <= wall or (quiet and quiet[0][0] <= wall):
                break
            if inbox:
                fn, arg = inbox.take()
                self._pending -= 1
                if wall > self._now:
                    self._now = wall
                fn(arg)
                continue
            wake = due
            if quiet and quiet[0][0] + env_module.QUIET_SLACK_S < wake:
                wake = quiet[0][0] + env_module.QUIET_SLACK_S
            if wake == float("inf") and self._pending == 0:
                raise simpy.core.EmptySchedule()
            self._wake_ns = t0_ns + round(wake * 1e9) if wake != float("inf") else 1 << 62
            if posted:
                self._wake_ns = 0
                continue
            inbox.wait(self._stall_timeout_s if wake == float("inf") else wake - wall)
            self._wake_ns = 0
        if quiet and (not queue_ or quiet[0] < queue_[0]):
            at, _prio, _eid, call = heappop(quiet)
            self._now = at
            call.fn(call.arg)
            return
        at, _prio, _eid, event = queue_[0]
        if type(event) is _Call:
            heappop(queue_)
            self._now = at
            event.fn(event.arg)
            return
        simpy.Environment.step(self)


def _scenario(env: HybridEnvironment, seed: int) -> list[tuple[Any, ...]]:
    """A random schedule, mostly due at once (a backlog: what the batching takes in one
    step), its calls noting (name, now) and making more calls, cancelling, posting."""
    rng = random.Random(seed)
    seen: list[tuple[Any, ...]] = []
    handles: list[_Call] = []
    names = iter(range(10**6))

    def call(depth: int) -> None:
        name = next(names)
        seen.append(("call", name, env.now))
        if depth < 3:
            for _ in range(rng.randrange(3)):
                delay = rng.choice((0.0, 0.0, -1.0, 1e-4, rng.random() * 2e-3))
                pick = rng.random()
                if pick < 0.4:
                    handles.append(env.after(delay, call, depth + 1))
                elif pick < 0.8:
                    handles.append(env.after_quietly(delay, call, depth + 1))
                elif pick < 0.9:
                    # posted at a time of the schedule (now), not of the wall clock
                    env.expect()
                    env.post_at(call, depth + 1, env.t0_ns + round(env.now * 1e9))
                else:
                    env.process(timer(depth + 1, max(0.0, delay)))
        if handles and rng.random() < 0.2:
            handles.pop(rng.randrange(len(handles))).cancel()

    def timer(depth: int, delay: float):
        yield env.timeout(delay)
        seen.append(("timeout", depth, env.now))
        call(depth)

    for _ in range(60):
        at = rng.choice((-1.0, 0.0, rng.random() * 3e-3))
        pick = rng.random()
        if pick < 0.5:
            handles.append(env.at(at, call, 0))
        elif pick < 0.85:
            handles.append(env.after_quietly(at, call, 0))
        else:
            env.process(timer(0, max(0.0, at)))
    return seen


@pytest.mark.parametrize("seed", range(8))
def test_batched_steps_run_the_same_calls_at_the_same_times_as_one_a_step(seed: int) -> None:
    """The order of calls and each one's ``now``: every time is the schedule's (no call
    comes from another thread at the wall clock's time), so the two runs agree exactly."""
    runs = []
    for cls in (HybridEnvironment, _OneAStep):
        env = cls(stall_timeout_s=5)
        seen = _scenario(env, seed)
        env.run()
        runs.append(seen)
        assert len(seen) > 60
    assert runs[0] == runs[1]
