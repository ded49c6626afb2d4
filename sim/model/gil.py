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
holder also competes for a core. :class:`NoGil` (sim.model.nogil, re-exported here) is
a free-threaded interpreter: the same interface, every "held" run is plain CPU work in
parallel.

Runs on :class:`sim.model.loop.Loop` (no SimPy). A thread is a state machine:
``acquire``, ``run`` and ``release`` take the continuation to call once done.
The waiters' switch-interval timers are not kept one per waiter: a waiter that
started waiting at ``a`` checks at ``a + k·SI``, and the first check that can
set the drop request is the first whose previous check (or the start of the
wait) came after the last hand-off; the GIL keeps one alarm
(:class:`sim.model.loop.Alarm`), for the earliest such check over all waiters,
and moves it when a hand-off or a new waiter changes it. This is the same rule
as one timer per waiter, without a heap entry per waiter per interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from sim.model.cores import Cores, CpuTask
from sim.model.loop import Loop
from sim.model.nogil import Cont, NoGil, SimGil

__all__ = ["CPythonGil", "NoGil", "SimGil"]


class CPythonGil(SimGil):
    """One GIL shared by named simulated threads (any hashable name)."""

    kind: ClassVar[str] = "cpython"

    def __init__(
        self,
        loop: Loop,
        cores: Cores,
        switch_interval_s: float,
        draw: Callable[[], float],
        handoff_s: float | Callable[[], float] = 0.0,
    ) -> None:
        if switch_interval_s <= 0:
            raise ValueError("switch interval must be > 0")
        super().__init__(loop, cores)
        self._si = switch_interval_s
        self._draw = draw
        #: The woken waiter's OS wake-up: a constant, or a draw per hand-off.
        self._handoff: Callable[[], float] = (
            handoff_s if callable(handoff_s) else partial(float, handoff_s)
        )
        #: (thread, continuation, time it started waiting)
        self._waiters: list[tuple[Any, Cont, float]] = []
        self._switches = 0
        self._last_switch = 0.0
        self._task: CpuTask | None = None  # the holder's CPU work in progress
        self._run_cont: Cont | None = None
        self._drop_pending = False
        self._forced = 0
        self._drop_at = math.inf  # when the earliest drop check is due (inf: none)
        self._alarm = loop.alarm(self._drop_check)

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
    def take(self, thread: Any) -> bool:
        """Take a free GIL for ``thread`` now (what :meth:`acquire` does at once, without
        a continuation to call); False when it is held: then call :meth:`acquire`."""
        if self.holder is not None:
            return False
        self.holder = thread
        self._switches += 1
        now = self._last_switch = self._loop.now
        if self.watch is not None:
            self.watch(now)
        return True

    def acquire(self, thread: Any, cont: Cont) -> None:
        """Call ``cont(None)`` once ``thread`` holds the GIL (at once when it is free)."""
        if self.holder is None:
            self.holder = thread
            self._switches += 1
            self._last_switch = self._loop.now
            if self.watch is not None:
                self.watch(self._loop.now)
            cont(None)
            return
        if self.holder == thread:
            raise RuntimeError(f"{thread!r} already holds the GIL")
        loop = self._loop
        now = loop.now
        waiters = self._waiters
        waiters.append((thread, cont, now))
        t = now + self._si
        if not waiters[1:] and self._task is not None and loop.clear(t):
            # The only waiter behind a running holder, and nothing else happens before
            # its switch interval is out: its drop request, now (no alarm to set and fire).
            # Callers call acquire last in their loop entry, as this needs.
            loop.now = t
            self._drop_check()
        elif t < self._drop_at:
            self._arm(t)

    def release(self, thread: Any, tail: bool = False) -> None:
        """``thread`` gives the GIL up (it blocks, sleeps or enters a GIL-free section).
        ``tail``: the caller does nothing after this in its loop entry (see _hand_off)."""
        if self.holder != thread:
            raise RuntimeError(f"{thread!r} releases a GIL held by {self.holder!r}")
        self.holder = None
        self._drop_pending = False
        if self._waiters:
            self._hand_off(None, tail)
        elif self.free_watch is not None:
            self.free_watch(self._loop.now)

    def run(self, thread: Any, work_s: float, cont: Cont, _arg: Any = None) -> None:
        """``work_s`` CPU seconds of Python by ``thread``, which holds the GIL; then
        ``cont(None)``, holding the GIL. In between, drop requests may take it away (the
        thread then waits like any other and resumes where it stopped: a ``partial`` of
        this, called as a continuation, hence ``_arg``)."""
        if self.holder != thread:
            raise RuntimeError(f"{thread!r} runs Python without holding the GIL")
        if work_s <= 0:
            cont(None)
            return
        if self._drop_pending and self._waiters:
            self._drop_pending = False
            self._forced += 1
            self.holder = None
            self._hand_off((thread, partial(self.run, thread, work_s, cont)))
            return
        self._run_cont = cont
        self._task = self._cores.run(work_s, self._run_done)

    def run_instant(self, thread: Any, work_s: float) -> bool:
        """:meth:`run` done at once when nothing can interrupt it (:meth:`Cores.instant`:
        no drop request pending, nothing else due before its end); False: call :meth:`run`.
        Only for a thread whose next step ends the current loop entry."""
        if self.holder != thread:
            raise RuntimeError(f"{thread!r} runs Python without holding the GIL")
        if self._drop_pending and self._waiters:
            return False
        return self._cores.instant(work_s)

    def _run_done(self, _arg: Any = None) -> None:
        cont = self._run_cont
        self._task = None
        self._run_cont = None
        assert cont is not None
        cont(None)

    # -- the rules ---------------------------------------------------------------
    def _arm(self, at: float) -> None:
        """The earliest drop check is now due at ``at`` (the GIL's alarm moves there)."""
        self._drop_at = at
        self._loop.set_alarm(self._alarm, at)

    def _rearm(self, requeued: bool) -> None:
        """After a hand-off: the earliest check of any waiter that can set the drop request.

        A waiter that started at ``a`` (before the hand-off) checks at ``a + k·SI``; the
        first check after the hand-off only sees that it happened, the next one can drop.
        The thread just forced off (``requeued``, last in the list) starts afresh."""
        waiters = self._waiters
        if not waiters:
            self._drop_at = math.inf
            self._loop.cancel(self._alarm)
            return
        si, last = self._si, self._last_switch
        first = last + si if requeued else math.inf
        for i in range(len(waiters) - 1 if requeued else len(waiters)):
            since = waiters[i][2]
            at = since + (math.floor((last - since) / si) + 2) * si
            if at < first:
                first = at
        self._arm(first)

    def _drop_check(self, _arg: Any = None) -> None:
        """A waiter's switch interval ran out: the holder drops the GIL at its next check.
        The GIL's alarm calls this, and acquire for a lone waiter: both last in their loop
        entry, which lets the hand-off go on at once (see _hand_off)."""
        self._drop_at = math.inf
        if self.holder is None or not self._waiters:
            return
        task = self._task
        if task is None:  # the holder is between runs (being woken): it drops on its next run
            self._drop_pending = True
            return
        left = self._cores.take_off(task)
        if left <= 0:  # its run ends this very instant: drop at the next
            self._drop_pending = True
            return
        cont = self._run_cont
        assert cont is not None
        thread = self.holder
        self._task = None
        self._run_cont = None
        self._forced += 1  # the holder queues again with the work left
        self.holder = None
        self._hand_off((thread, partial(self.run, thread, left, cont)), True)

    def _hand_off(self, requeue: tuple[Any, Cont] | None, tail: bool = False) -> None:
        """Give the GIL to a waiter drawn at random; ``requeue`` (the thread just forced
        off) joins the waiters after the draw: it may not take the GIL straight back.
        ``tail``: the caller has nothing left to do in its loop entry, so the waiter may
        go on at once when its wake-up comes before anything else (Loop.clear)."""
        waiters = self._waiters
        n = len(waiters)
        if n > 1:
            i = int(self._draw() * n)
            thread, cont, _since = waiters.pop(i if i < n else n - 1)
        else:
            thread, cont, _since = waiters.pop()
        now = self._loop.now
        self.holder = thread
        self._switches += 1
        self._last_switch = now
        if requeue is not None:
            waiters.append((requeue[0], requeue[1], now))
            if n == 1:  # _rearm(True) with only the thread just forced off waiting
                at = self._drop_at = now + self._si  # self._arm(at), inline
                self._loop.set_alarm(self._alarm, at)
            else:
                self._rearm(True)
        elif n == 1:  # _rearm(False) with nobody left waiting
            self._drop_at = math.inf
            self._loop.cancel(self._alarm)
        else:
            self._rearm(False)
        delay = self._handoff()
        loop = self._loop
        if tail:
            t = now + delay if delay > 0 else now
            if loop.clear(t):
                loop.now = t
                cont(None)
                return
        loop.after(delay, cont)
