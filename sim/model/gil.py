"""The GIL as a simulated resource, with CPython's rules (3.2+ "new GIL", ceval_gil.c).

Rules modelled:

* A thread that wants a free GIL takes it at once.
* A thread that finds it held waits; each time one switch interval passes with no
  hand-off in between, it sets the *drop request*.
* The holder honours a drop request at its next eval-breaker check (modelled as
  immediate: bytecode checks every few instructions, microseconds apart), releases
  the GIL and may not take it back before another thread has (FORCE_SWITCHING).
* Which waiter gets a released GIL is **not FIFO**. CPython signals one waiter on
  a condition variable and the OS decides which wakes first; the policy modelled is
  a waiter drawn uniformly at random (from the run's seeded generator). It is the
  simplest policy that is not FIFO and favours no thread, and it reproduces what
  real runs show: behind several CPU-bound threads a waiter can lose more than
  one round, so its wait exceeds one switch interval with a long tail.
* A thread leaving a GIL-free section (I/O, a sleep, a nogil kernel) queues for the
  GIL again like any other waiter: behind a CPU-bound holder it waits up to a whole
  switch interval (the convoy effect).
* A woken waiter needs ``handoff_s`` (the OS wake-up) before it runs; the GIL is
  reserved for it meanwhile.

Work done holding the GIL is CPU work on :class:`~sim.model.cores.Cores`, so a
holder also competes for a core. :class:`NoGil` is a free-threaded interpreter:
the same interface, every "held" run is plain CPU work in parallel.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy

from sim.model.cores import Cores, CpuTask, succeed_after

__all__ = ["CPythonGil", "NoGil", "SimGil"]

Proc = Generator[Any, Any, None]


class CPythonGil:
    """One GIL shared by named simulated threads (any hashable name)."""

    kind = "cpython"

    def __init__(
        self,
        env: simpy.Environment,
        cores: Cores,
        switch_interval_s: float,
        draw: Callable[[], float],
        handoff_s: float | Callable[[], float] = 0.0,
    ) -> None:
        if switch_interval_s <= 0:
            raise ValueError("switch interval must be > 0")
        self._env = env
        self._cores = cores
        self._si = switch_interval_s
        self._draw = draw
        #: The woken waiter's OS wake-up: a constant, or a draw per hand-off.
        self._handoff: Callable[[], float] = (
            handoff_s if callable(handoff_s) else (lambda h=float(handoff_s): h)
        )
        self._holder: Any = None
        self._waiters: list[tuple[Any, simpy.Event]] = []
        self._switches = 0
        self._task: CpuTask | None = None  # the holder's CPU work in progress
        self._drop_pending = False
        self._forced = 0

    @property
    def holder(self) -> Any:
        return self._holder

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def switches(self) -> int:
        """Times the GIL changed hands."""
        return self._switches

    @property
    def forced_drops(self) -> int:
        """Hand-offs caused by a drop request (a waiter's switch interval ran out)."""
        return self._forced

    # -- taking and giving back -------------------------------------------------
    def acquire(self, thread: Any) -> Proc:
        """Process body: return once ``thread`` holds the GIL."""
        if self._holder is None:
            self._holder = thread
            self._switches += 1
            return
        if self._holder == thread:
            raise RuntimeError(f"{thread!r} already holds the GIL")
        event = self._env.event()
        self._waiters.append((thread, event))
        self._arm(event, self._switches)
        yield event

    def release(self, thread: Any) -> None:
        """``thread`` gives the GIL up (it blocks, sleeps or enters a GIL-free section)."""
        if self._holder != thread:
            raise RuntimeError(f"{thread!r} releases a GIL held by {self._holder!r}")
        self._holder = None
        self._drop_pending = False
        if self._waiters:
            self._hand_off()

    def run(self, thread: Any, work_s: float) -> Proc:
        """Process body: ``work_s`` CPU seconds of Python by ``thread``, which holds the GIL.

        Returns holding the GIL; in between, drop requests may take it away (the
        thread then waits like any other and resumes where it stopped).
        """
        if self._holder != thread:
            raise RuntimeError(f"{thread!r} runs Python without holding the GIL")
        while work_s > 0:
            if self._drop_pending and self._waiters:
                self._drop_pending = False
                self._forced += 1
                self._holder = None
                self._hand_off()
                yield from self.acquire(thread)
            task = self._cores.run(work_s)
            self._task = task
            work_s = yield task.event
            if self._task is task:
                self._task = None
            if work_s > 0:  # dropped on request: queue again
                yield from self.acquire(thread)

    # -- the rules ---------------------------------------------------------------
    def _arm(self, event: simpy.Event, seen: int) -> None:
        timer = self._env.timeout(self._si)
        timer.callbacks.append(lambda _t: self._interval_passed(event, seen))

    def _interval_passed(self, event: simpy.Event, seen: int) -> None:
        if event.triggered:
            return
        if self._switches == seen and self._holder is not None:
            self._drop_request()
        self._arm(event, self._switches)

    def _drop_request(self) -> None:
        task = self._task
        if task is None:  # the holder is between runs (being woken): it drops on its next run
            self._drop_pending = True
            return
        self._task = None
        if self._cores.stop(task) <= 0:  # its run ended this very instant: drop at the next
            self._drop_pending = True
            return
        self._forced += 1  # the holder's run() sees the work left and queues again
        self._holder = None
        self._hand_off()

    def _hand_off(self) -> None:
        waiters = self._waiters
        i = int(self._draw() * len(waiters)) if len(waiters) > 1 else 0
        thread, event = waiters.pop(min(i, len(waiters) - 1))
        self._holder = thread
        self._switches += 1
        succeed_after(self._env, event, self._handoff())


class NoGil:
    """Free-threaded CPython: no GIL; Python runs in parallel, limited by the cores."""

    kind = "none"

    def __init__(self, env: simpy.Environment, cores: Cores) -> None:
        self._env = env
        self._cores = cores

    @property
    def holder(self) -> Any:
        return None

    @property
    def waiting(self) -> int:
        return 0

    @property
    def switches(self) -> int:
        return 0

    @property
    def forced_drops(self) -> int:
        return 0

    def acquire(self, thread: Any) -> Proc:
        return
        yield  # pragma: no cover - makes this a generator

    def release(self, thread: Any) -> None:
        return None

    def run(self, thread: Any, work_s: float) -> Proc:
        if work_s > 0:
            yield self._cores.run(work_s).event


SimGil = CPythonGil | NoGil
