"""The simulated threads of a point: the simulation thread (harness) and the load workers.

They mirror what real mode runs (sim.runtime.env, sim.runtime.workers): the
simulation thread sleeps without the GIL until a timer is due or a worker posts
to its inbox, wakes (OS wake-up or timer lateness), takes the GIL and does its
work one item at a time, keeping the GIL while items are waiting; a load worker
sleeps on the job queue, wakes, takes the GIL, runs the request's CPU stages
(GIL-held part, then GIL-free parts, taking the GIL back after each) and posts
the result to the simulation thread's inbox.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import simpy

from sim.model.cores import Cores, succeed_after
from sim.model.gil import CPythonGil, NoGil

__all__ = ["SIM_THREAD", "Harness", "ModelJob", "ModelWorkers"]

SIM_THREAD = "kvsim-sim"


class Harness:
    """The simulation thread: serves posted items one at a time, holding the GIL."""

    def __init__(self, env: simpy.Environment, gil: CPythonGil | NoGil) -> None:
        self._env = env
        self._gil = gil
        self._items: deque[tuple[float, simpy.Event, Any]] = deque()
        self._sleeping: simpy.Event | None = None
        self.cpu_s = 0.0

    def start(self) -> None:
        self._env.process(self._loop())

    def post(
        self,
        cost_s: float,
        late: Callable[[], float] | None,
        event: simpy.Event | None = None,
        value: Any = None,
    ) -> simpy.Event:
        """Ask the simulation thread to do ``cost_s`` of work now (a timer fell due or a
        message arrived); ``late()`` draws how long it takes to wake if asleep. The returned
        event succeeds (with ``value``, or the time) once the work is done."""
        ev = event if event is not None else self._env.event()
        self._items.append((cost_s, ev, value))
        sleeping = self._sleeping
        if sleeping is not None:
            self._sleeping = None
            succeed_after(self._env, sleeping, late() if late is not None else 0.0)
        return ev

    def _loop(self) -> Generator[Any, Any, None]:
        env, gil, items = self._env, self._gil, self._items
        holding = False
        while True:
            if not items:
                if holding:
                    gil.release(SIM_THREAD)
                    holding = False
                self._sleeping = env.event()
                yield self._sleeping  # fires once woken, the wake-up latency later
            if not holding:
                yield from gil.acquire(SIM_THREAD)
                holding = True
            cost, ev, value = items.popleft()
            if cost > 0:
                self.cpu_s += cost
                yield from gil.run(SIM_THREAD, cost)
            ev.succeed(env.now if value is None else value)


@dataclass
class ModelJob:
    """One request's CPU stages; the worker fills in the timings (seconds of model time)."""

    hold_s: float
    free_cpu_s: float
    free_sleep_s: float
    done: simpy.Event
    start: float = 0.0
    end: float = 0.0
    free_wall: float = 0.0
    thread: str = ""


class ModelWorkers:
    """N load threads taking whole jobs from one FIFO queue (sim.runtime.workers)."""

    def __init__(
        self,
        env: simpy.Environment,
        gil: CPythonGil | NoGil,
        cores: Cores,
        harness: Harness,
        workers: int,
        wake: Callable[[], float],
        sleep_late: Callable[[], float],
        complete_s: float,
    ) -> None:
        self._env = env
        self._gil = gil
        self._cores = cores
        self._harness = harness
        self._n = workers
        self._wake = wake
        self._sleep_late = sleep_late
        self._complete_s = complete_s
        self._jobs: deque[ModelJob] = deque()
        self._idle: deque[simpy.Event] = deque()

    def start(self) -> None:
        for i in range(self._n):
            self._env.process(self._loop(f"kvsim-load-{i}"))

    def submit(self, job: ModelJob) -> None:
        self._jobs.append(job)
        if self._idle:
            succeed_after(self._env, self._idle.popleft(), self._wake())

    def _loop(self, name: str) -> Generator[Any, Any, None]:
        env, gil, jobs = self._env, self._gil, self._jobs
        holding = False
        while True:
            if not jobs:
                if holding:
                    gil.release(name)
                    holding = False
                wake = env.event()
                self._idle.append(wake)
                yield wake  # fires the OS wake-up latency after a job was queued
                if not jobs:  # another worker took it meanwhile
                    continue
            if not holding:
                yield from gil.acquire(name)
                holding = True
                if not jobs:  # taken by another worker while this one waited for the GIL
                    continue
            job = jobs.popleft()
            job.thread = name
            job.start = env.now
            if job.hold_s > 0:
                yield from gil.run(name, job.hold_s)
            if job.free_cpu_s > 0:
                t0 = env.now
                gil.release(name)
                yield self._cores.run(job.free_cpu_s).event
                yield from gil.acquire(name)
                job.free_wall += env.now - t0
            if job.free_sleep_s > 0:
                t0 = env.now
                gil.release(name)
                yield env.timeout(job.free_sleep_s + self._sleep_late())
                yield from gil.acquire(name)
                job.free_wall += env.now - t0
            job.end = env.now
            self._harness.post(self._complete_s, self._wake, job.done, job)
