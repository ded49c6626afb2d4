"""The GIL as a simulated resource, with CPython's rules (3.2+ "new GIL", ceval_gil.c).

Rules modelled (docs/model-mode.md, "The GIL", says which are kept and which simplified):

* A thread that wants a free GIL takes it at once.
* A thread that finds it held waits in rounds of one switch interval (at least 1 µs,
  as take_gil's), each a timed wait that wakes late by a drawn timer lateness (the
  OS's timer slack and wake-up: ``timer_late_s``, measured by calibrate). A round that
  ends with no hand-off since it began sets the *drop request*; one during which the
  GIL changed hands (CPython's ``switch_number``) does not, and the next round begins.
* The holder honours a drop request at its next eval-breaker check (modelled as
  immediate: bytecode checks every few instructions, microseconds apart), releases
  the GIL and may not take it back before another thread has (FORCE_SWITCHING): it
  waits until the woken thread has taken the GIL (``forced_handoff_s``), is woken
  itself (``switch_back_s``), and only then begins its own timed wait.
* Which waiter gets a released GIL is **not FIFO**. CPython signals one waiter on
  a condition variable and the OS decides which wakes first; the policy modelled is
  a waiter drawn uniformly at random (from the run's seeded generator). It is the
  simplest policy that is not FIFO and favours no thread, and it reproduces what
  real runs show: behind several CPU-bound threads a waiter can lose more than
  one round, so its wait exceeds one switch interval with a long tail.
* A thread leaving a GIL-free section (I/O, a sleep, a nogil kernel) queues for the
  GIL again like any other waiter: behind a CPU-bound holder it waits up to a whole
  switch interval (the convoy effect).
* A woken waiter needs ``handoff_s`` after a release (``forced_handoff_s`` after a drop
  request: kvsim calibrate times both on the GIL itself) before it runs, and the GIL is
  free meanwhile: a thread that calls ``take_gil`` in that window (back from a sleep,
  woken from FORCE_SWITCHING, a timed wait that ran out) takes it first, and the woken
  one, finding it held, begins a new round (barging). A change of holder (CPython's
  ``switch_number``: the taker is not the last holder) moves every round on.
* Library code that releases the GIL in mid-hold (NumPy's ufunc loops, torch's
  operators) lets a waiter in when the release outlasts its wake-up: with
  ``gil.own_releases`` the holder calls :meth:`CPythonGil.pass_on` at the points
  calibrate saw that happen, and queues behind the waiter like any other (no
  FORCE_SWITCHING: nobody asked it to drop).

Work done holding the GIL is CPU work on :class:`~sim.model.cores.Cores`, so a
holder also competes for a core. :class:`NoGil` (sim.model.nogil, re-exported here) is
a free-threaded interpreter: the same interface, every "held" run is plain CPU work in
parallel.

Runs on :class:`sim.model.loop.Loop` (no SimPy). A thread is a state machine:
``acquire``, ``run`` and ``release`` take the continuation to call once done.
The waiters' rounds are not kept as timers: each waiter holds the start and end of
its round that may set the drop request; a hand-off moves every round that began by
then one round on (the round in progress only sees the hand-off), and the GIL keeps
one alarm (:class:`sim.model.loop.Alarm`) for the earliest end over all waiters.
This is the same rule as one timer per waiter, without a heap entry per waiter per
round.
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

#: The shortest timed wait CPython's take_gil makes: one microsecond.
_MIN_INTERVAL_S = 1e-6


def _as_draw(latency: float | Callable[[], float]) -> Callable[[], float]:
    """A latency given as a constant or as a draw, as a draw."""
    return latency if callable(latency) else partial(float, latency)


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
        timer_late_s: float | Callable[[], float] = 0.0,
        forced_handoff_s: float | Callable[[], float] | None = None,
        switch_back_s: float | Callable[[], float] | None = None,
    ) -> None:
        if switch_interval_s <= 0:
            raise ValueError("switch interval must be > 0")
        super().__init__(loop, cores)
        # CPython keeps the interval in whole microseconds and waits at least one
        # (take_gil: ``interval >= 1 ? interval : 1``): sys.setswitchinterval(1e-9) too.
        self._si = max(switch_interval_s, _MIN_INTERVAL_S)
        self._draw = draw
        #: A release's hand-off to the woken waiter: a constant, or a draw per hand-off.
        self._handoff: Callable[[], float] = _as_draw(handoff_s)
        #: A forced hand-off's (the drop request honoured, the waiter woken), and the
        #: forced-off thread's return from FORCE_SWITCHING once the waiter took the GIL:
        #: ``handoff_s``'s where not given.
        self._forced_handoff = (
            self._handoff if forced_handoff_s is None else _as_draw(forced_handoff_s)
        )
        self._switch_back = self._handoff if switch_back_s is None else _as_draw(switch_back_s)
        #: How late a waiter's timed wait wakes (timer slack, the OS wake-up): a constant,
        #: or a draw per wait round.
        self._late: Callable[[], float] = _as_draw(timer_late_s)
        #: [thread, continuation, start, end] per waiter: its wait round that may set the
        #: drop request runs from ``start`` to ``end`` (the timed wait's wake-up), and sets
        #: it only if the GIL did not change hands in between.
        self._waiters: list[list[Any]] = []
        self._switches = 0
        #: The thread that held the GIL last (CPython's ``last_holder``).
        self._last: Any = None
        self._task: CpuTask | None = None  # the holder's CPU work in progress
        self._run_cont: Cont | None = None
        self._drop_pending = False
        self._forced = 0
        self._drop_at = math.inf  # when the earliest drop check is due (inf: none)
        self._alarm = loop.alarm(self._drop_check)
        #: The holder's run's end, bound once (not a bound method object per run).
        self._run_done_cb: Cont = self._run_done
        self._attempt_cb: Cont = self._attempt

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
        self._took(thread)
        return True

    def acquire(self, thread: Any, cont: Cont) -> None:
        """Call ``cont(None)`` once ``thread`` holds the GIL (at once when it is free)."""
        if self.holder is None:
            self._took(thread)
            cont(None)
            return
        if self.holder == thread:
            raise RuntimeError(f"{thread!r} already holds the GIL")
        loop = self._loop
        now = loop.now
        waiters = self._waiters
        t = now + self._si + self._late()
        waiters.append([thread, cont, now, t])
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
        self._task = self._cores.run(work_s, self._run_done_cb)

    def pass_on(self, thread: Any, cont: Cont) -> float | None:
        """A release of the holder's own in mid-run (NumPy's inside a large ufunc): with
        threads waiting, one drawn at random takes the GIL, and ``thread`` waits behind it
        like any waiter from now (no FORCE_SWITCHING: nobody asked it to drop), then
        ``cont(None)``. Returns the woken thread's wake-up (s): the release outlasted it
        (that is when a waiter gets in), so ``thread``'s GIL-free stretch ran on meanwhile.
        None, and nothing done, with nobody waiting."""
        if self.holder != thread:
            raise RuntimeError(f"{thread!r} releases a GIL held by {self.holder!r}")
        if not self._waiters:
            return None
        self.holder = None
        self._drop_pending = False
        # not ``tail``: nothing runs before the caller has taken the wake-up into account
        return self._hand_off((thread, cont), False, False)

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
    def _took(self, thread: Any) -> None:
        """``thread`` takes the free GIL now (take_gil's ``_ready``). A change of holder
        is CPython's ``switch_number``: every round in progress sees it (_rearm)."""
        self.holder = thread
        self._switches += 1
        if thread != self._last:
            self._last = thread
            if self._waiters:
                self._rearm()
        if self.watch is not None:
            self.watch(self._loop.now)

    def _attempt(self, who: Any) -> None:
        """``who`` (thread, continuation) calls take_gil now (a woken waiter, or one back
        from FORCE_SWITCHING or from its own release): the GIL if free, else a new round.
        A loop callback with its argument (no partial per hand-off)."""
        self.acquire(who[0], who[1])

    def _arm_earliest(self) -> None:
        """The GIL's alarm at the earliest round's end (cancelled with nobody waiting)."""
        waiters = self._waiters
        if not waiters:
            self._drop_at = math.inf
            self._loop.cancel(self._alarm)
            return
        first = waiters[0][3]
        for w in waiters:
            if w[3] < first:
                first = w[3]
        self._arm(first)

    def _arm(self, at: float) -> None:
        """The earliest drop check is now due at ``at`` (the GIL's alarm moves there)."""
        self._drop_at = at
        self._loop.set_alarm(self._alarm, at)

    def _rearm(self) -> None:
        """After a hand-off (now): every waiter whose round began by now sees the GIL
        change hands when its timed wait wakes at ``end``, so it does not set the drop
        request then but waits one round more (CPython's ``switch_number`` check); then
        the GIL's alarm moves to the earliest round's end. Only with threads waiting."""
        waiters = self._waiters
        now, si, late = self._loop.now, self._si, self._late
        first = math.inf
        for w in waiters:
            if w[2] <= now:
                w[2] = end = w[3]
                w[3] = end = end + si + late()
            else:
                end = w[3]
            if end < first:
                first = end
        self._arm(first)

    def _drop_check(self, _arg: Any = None) -> None:
        """A waiter's switch interval ran out: the holder drops the GIL at its next check.
        The GIL's alarm calls this, and acquire for a lone waiter: both last in their loop
        entry, which lets the hand-off go on at once (see _hand_off)."""
        self._drop_at = math.inf
        waiters = self._waiters
        if not waiters:
            return
        now = self._loop.now
        if self.holder is None:
            # The GIL is free (its woken waiter is not running yet): a waiter whose timed
            # wait ran out finds it unlocked and takes it (take_gil's loop), ahead of the
            # woken one.
            for i, w in enumerate(waiters):
                if w[3] <= now:
                    waiters.pop(i)
                    self._took(w[0])
                    self._arm_earliest()
                    w[1](None)
                    return
            self._arm_earliest()
            return
        # The waiters whose timed wait woke now: each sets the drop request unless the
        # GIL changed hands during its round (then _rearm moved the round on, so no
        # round due now saw one), and waits a round more.
        si, late = self._si, self._late
        due = False
        first = math.inf
        for w in waiters:
            if w[3] <= now:
                due = True
                w[2] = now
                w[3] = now + si + late()
            if w[3] < first:
                first = w[3]
        self._arm(first)
        if not due:
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

    def _hand_off(
        self, requeue: tuple[Any, Cont] | None, tail: bool = False, forced: bool = True
    ) -> float:
        """The GIL goes free and one waiter, drawn at random, is woken; it takes the GIL
        after its wake-up unless another thread took it first (barging: then it waits a
        new round). ``requeue`` (the thread just forced off, or ``forced`` False: that
        let it go mid-run) calls take_gil later: forced, after FORCE_SWITCHING (the woken
        one's wake-up, then its own); else once the woken one runs (the release outlasted
        that wake-up: that is when a waiter gets in).
        ``tail``: the caller has nothing left to do in its loop entry, so the waiter may
        go on at once when its wake-up comes before anything else (Loop.clear). Returns
        the woken waiter's wake-up (s)."""
        waiters = self._waiters
        n = len(waiters)
        if n > 1:
            i = int(self._draw() * n)
            w = waiters.pop(i if i < n else n - 1)
        else:
            w = waiters.pop()
        loop = self._loop
        now = loop.now
        self.holder = None
        delay = self._forced_handoff() if forced and requeue is not None else self._handoff()
        if not waiters:
            self._arm_earliest()  # nobody left waiting: no alarm
        t = now + delay if delay > 0 else now
        at_once = tail and loop.clear(t)  # nothing can take the GIL before the waiter
        if not at_once:
            loop.after(delay, self._attempt_cb, w)
        if requeue is not None:  # after the woken waiter's attempt, at the same time too
            at = now + delay + self._switch_back() if forced else t
            loop.after(at - now, self._attempt_cb, requeue)
        if at_once:
            loop.now = t
            self._took(w[0])
            w[1](None)
        return delay
