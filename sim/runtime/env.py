"""A SimPy environment whose clock follows the wall clock and that threads can wake.

SimPy's ``RealtimeEnvironment`` sleeps until the next timer and cannot be woken
by another thread, so a worker finishing early would wait for an unrelated
timer. :class:`HybridEnvironment` blocks on a thread-safe inbox until the next
event is due, then lets :meth:`simpy.Environment.step` process it; worker
threads post completions to the inbox with :meth:`HybridEnvironment.complete`.
Only the simulation thread ever touches SimPy objects (the threading rule).

The load path of a request runs as plain callbacks, not as a SimPy process: a
thread posts ``(fn, arg)`` with :meth:`HybridEnvironment.post` and ``fn(arg)`` runs
on the simulation thread when picked up, and :meth:`HybridEnvironment.after` puts a
bare callback in SimPy's queue. A process per request cost about eight SimPy events
and as many generator resumes on the simulation thread, whose GIL time is the
harness's own cost (sim.benches.harness).

A *quiet* call (:meth:`HybridEnvironment.after_quietly`) is one nothing on the wall
clock waits for — a modelled transfer's end, which only notes a time the model
already fixed: the thread does not wake for it, but runs it at its own time, in
order, whenever it is awake anyway (for the next arrival, a load thread's answer),
and at most :data:`~sim.store.clock.QUIET_SLACK_S` after it otherwise. Each wake-up
costs the harness tens of µs of GIL time on a virtual machine; a request's
transfer end was one of its three.

A load thread's answer can be posted *at* its own time (:meth:`HybridEnvironment.
post_at`, timed when the load thread posts it): it runs at that time, in order
with the clock's calls, as a quiet call does — what follows it (the transfer a
real connector's load thread would start itself) starts when the load thread was
done, not when the simulation thread got the GIL to look. It wakes the thread only
if that would otherwise sleep longer than the slack.

The one invariant that lets SimPy's own ``step`` run unchanged: the clock is
only ever moved forward (to deliver a completion) while no queued event is due,
so to a time before the earliest one, and popping the queue never moves it
backwards.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush
from time import perf_counter_ns, thread_time_ns
from typing import Any

import simpy
from simpy.core import EmptySchedule
from simpy.events import NORMAL

from sim.errors import StallError
from sim.runtime.inbox import Inbox
from sim.store.clock import QUIET_SLACK_S

__all__ = ["HybridEnvironment", "StallError"]

_INF = float("inf")
_NEVER_NS = 1 << 62
_SLACK_NS = round(QUIET_SLACK_S * 1e9)

Posted = tuple[Callable[[Any], None], Any]


class _Call:
    """A queue entry that calls ``fn(arg)`` when its time comes: :meth:`HybridEnvironment.step`
    runs it itself, without an Event, a Timeout or a lambda.

    It can be cancelled: a cancelled call at the head of the queue is dropped without
    waiting for its time, so a timer made stale (the store's link re-arms whenever a
    transfer starts or ends) costs no wake-up of the simulation thread."""

    __slots__ = ("arg", "fn", "live")

    def __init__(self, fn: Callable[[Any], None], arg: Any) -> None:
        self.fn = fn
        self.arg = arg
        self.live = True

    def cancel(self) -> None:
        self.live = False


class HybridEnvironment(simpy.Environment):
    """Discrete-event clock tied to ``time.perf_counter`` (seconds since start).

    ``env.now`` never runs ahead of the wall clock: an event scheduled for time
    *t* is processed once the wall clock reaches *t*. When the simulation falls
    behind (a busy GIL), overdue events are processed late, in time order, at their
    own times; a completion posted by a thread is delivered once none is overdue, at
    the wall time it is picked up. The clock never goes backwards.

    Timestamps of record are given in *run time*: seconds since the origin, which
    is time zero until :meth:`set_origin` moves it (to where the load starts, so
    that set-up before it — an engine-alone baseline — does not shift the schedule).
    """

    def __init__(self, stall_timeout_s: float | None = None) -> None:
        super().__init__(initial_time=0.0)
        self._inbox: Inbox[Posted] = Inbox()
        #: Answers posted at their own time (post_at): (perf_counter_ns, fn, arg).
        self._posted_at: deque[tuple[int, Callable[[Any], None], Any]] = deque()
        #: perf_counter_ns at which the thread will wake if nothing rings (0 while
        #: awake): tells post_at whether to ring.
        self._wake_ns = 0
        #: Quiet calls, a heap of SimPy queue entries of its own (the same ordering key).
        self._quiet: list[tuple[float, int, int, _Call]] = []

        self._pending = 0
        self._t0_ns = time.perf_counter_ns()
        self._origin_ns = self._t0_ns
        self._stall_timeout_s = stall_timeout_s
        self._asleep_cpu_ns = 0
        self._waits = 0

    @property
    def t0_ns(self) -> int:
        """``perf_counter_ns`` at ``env.now == 0``."""
        return self._t0_ns

    @property
    def origin_ns(self) -> int:
        """``perf_counter_ns`` at run time zero (see :meth:`set_origin`)."""
        return self._origin_ns

    @property
    def pending(self) -> int:
        """Events handed to threads and not yet completed."""
        return self._pending

    def wall(self) -> float:
        """The wall clock on the scale of ``env.now``."""
        return (time.perf_counter_ns() - self._t0_ns) / 1e9

    def set_origin(self) -> float:
        """Make run time zero *now*; returns that instant as an ``env.now`` time.

        A whole number of nanoseconds, so that a planned arrival at run time *a*
        is exactly ``origin_ns + round(a * 1e9)`` on the ``perf_counter_ns`` scale.
        """
        self._origin_ns = time.perf_counter_ns()
        return (self._origin_ns - self._t0_ns) / 1e9

    def to_run_time(self, t_ns: int) -> float:
        """A ``perf_counter_ns`` timestamp as run time (seconds since the origin)."""
        return (t_ns - self._origin_ns) / 1e9

    @property
    def asleep_cpu_ns(self) -> int:
        """CPU time the simulation thread spent in its waits for the next event.

        It waits with the GIL released, so this is CPU it burnt without the GIL:
        the kernel's cost of putting it to sleep and waking it (tens of µs a wake
        on a virtual machine). Its GIL time is its CPU time less this.
        """
        return self._asleep_cpu_ns

    @property
    def waits(self) -> int:
        """Times the simulation thread went to sleep for the next event. Each costs a
        wake-up, and the Python run right after one is slower (cold caches): the
        harness's cost per request grows with its waits per request."""
        return self._waits

    # -- the thread side -------------------------------------------------
    def expect(self) -> None:
        """A thread will :meth:`post` one completion (call on the sim thread, before)."""
        self._pending += 1

    def post(self, fn: Callable[[Any], None], arg: Any) -> None:
        """Thread-safe: run ``fn(arg)`` on the simulation thread, at the wall time it is
        picked up. Answers one :meth:`expect`."""
        self._inbox.put((fn, arg))

    def post_at(self, fn: Callable[[Any], None], arg: Any, at_ns: int) -> None:
        """Thread-safe: run ``fn(arg)`` on the simulation thread at ``at_ns``
        (``perf_counter_ns``, when the thing happened: now or just before), in order
        with the clock's calls; the thread is woken for it only if it would otherwise
        sleep longer than :data:`QUIET_SLACK_S`. Answers one :meth:`expect`."""
        self._posted_at.append((at_ns, fn, arg))
        # After the append: a thread about to sleep sets _wake_ns, then looks again.
        if self._wake_ns - perf_counter_ns() > _SLACK_NS:
            self._inbox.ring()

    def _take_posted_at(self) -> None:
        """Answers posted at their time go among the quiet calls, at that time (or now, if
        the clock has passed it between the poster's timing and its append)."""
        posted, t0_ns = self._posted_at, self._t0_ns
        while posted:
            at_ns, fn, arg = posted.popleft()
            self._pending -= 1
            self._push_quiet((at_ns - t0_ns) / 1e9, fn, arg)

    def _push_quiet(self, at: float, fn: Callable[[Any], None], arg: Any) -> _Call:
        """A quiet call at ``at``, or now if that has passed (the clock never goes back)."""
        call = _Call(fn, arg)
        heappush(self._quiet, (at if at > self._now else self._now, NORMAL, next(self._eid), call))
        return call

    def external_event(self) -> simpy.Event:
        """An event that some thread will complete through :meth:`complete` (call on sim thread)."""
        self.expect()
        return simpy.Event(self)

    def complete(self, event: simpy.Event, ok: bool, value: Any) -> None:
        """Thread-safe: succeed (``ok``) or fail the event with ``value``, on the sim thread."""
        self.post(event.succeed if ok else event.fail, value)

    # -- callbacks on the clock -------------------------------------------
    def after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> _Call:
        """Call ``fn(arg)`` ``delay`` seconds from now (a negative delay counts as 0), in
        order with SimPy's own events (sim.store.clock.Clock); ``cancel()`` on the
        returned handle drops it."""
        return self.at(self._now + delay if delay > 0 else self._now, fn, arg)

    def at(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> _Call:
        """As :meth:`after`, at time ``t`` (now, if that has passed): a planned time kept
        as planned (``now + (t - now)`` may round away from it)."""
        call = _Call(fn, arg)
        heappush(self._queue, (t if t > self._now else self._now, NORMAL, next(self._eid), call))
        return call

    def after_quietly(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> _Call:
        """As :meth:`after`, for a call nothing on the wall clock waits for: it runs at its
        own time (``now`` is that time), in order with everything else, but the thread
        sleeps through it and runs it when it next wakes, or :data:`QUIET_SLACK_S` late
        at most."""
        # _push_quiet's two lines, inline: the store model's timer on every request's path
        call = _Call(fn, arg)
        at = self._now + delay
        heappush(self._quiet, (at if at > self._now else self._now, NORMAL, next(self._eid), call))
        return call

    def run_time(self) -> float:
        """``now`` as run time (seconds since the origin)."""
        return self._now - (self._origin_ns - self._t0_ns) / 1e9

    # -- the simulation side ---------------------------------------------
    def step(self) -> None:
        """Process the next event once its time has come (SimPy's own ``step``), and then
        every bare callback already due at the wall time read for it.

        Events come in time order: one already due (its time has passed on the wall
        clock) is processed before any completion posted since, because the
        completion happened later. A completion is delivered only while nothing is
        due, at the wall time it is picked up — which keeps the clock no later than
        the earliest queued event, and makes a process resumed by a completion see
        the real time (a transfer it starts then lasts its full modelled time).

        The calls after the first run in this same step, without a new read of the
        clock, while the earliest entry is a bare callback due by the wall time already
        read (it is due now all the more) and no answer was posted meanwhile: the same
        calls in the same order at the same ``now`` as one step each, less a SimPy
        ``step`` call and a clock read per call (the harness's GIL time per request).
        """
        queue_, quiet, inbox, t0_ns = self._queue, self._quiet, self._inbox, self._t0_ns
        posted = self._posted_at
        ran = False  # a lone answer already run, earlier than anything queued
        while True:
            if posted:
                # A lone answer earlier than every queued entry runs now, without going
                # through the quiet heap (a _Call, a push and a pop: at 1,000 requests/s
                # every wake-up finds the last request's answer so)
                at = (posted[0][0] - t0_ns) / 1e9
                if at < self._now:
                    at = self._now
                if (
                    len(posted) == 1
                    and (not queue_ or at < queue_[0][0])
                    and (not quiet or at < quiet[0][0])
                ):
                    _at_ns, fn, arg = posted.popleft()
                    self._pending -= 1
                    wall = (perf_counter_ns() - t0_ns) / 1e9
                    self._now = at
                    fn(arg)
                    ran = True
                    break
                self._take_posted_at()
            while queue_ and type(head := queue_[0][3]) is _Call and not head.live:
                heappop(queue_)  # cancelled: not worth waking up for
            while quiet and not quiet[0][3].live:
                heappop(quiet)
            wall = (perf_counter_ns() - t0_ns) / 1e9
            due = queue_[0][0] if queue_ else _INF
            if due <= wall or (quiet and quiet[0][0] <= wall):
                break  # awake anyway: quiet calls already due run too, in order
            if inbox:  # a completion already posted (a C call: the inbox is a deque)
                fn, arg = inbox.popleft()
                self._pending -= 1
                if wall > self._now:
                    self._now = wall
                fn(arg)
                continue
            wake = due
            if quiet and quiet[0][0] + QUIET_SLACK_S < wake:
                wake = quiet[0][0] + QUIET_SLACK_S
            if wake == _INF and self._pending == 0:
                raise EmptySchedule()
            timeout = self._stall_timeout_s if wake == _INF else wake - wall
            self._wake_ns = _NEVER_NS if wake == _INF else t0_ns + round(wake * 1e9)
            if posted:  # posted before _wake_ns was set: the poster did not ring
                self._wake_ns = 0
                continue
            self._waits += 1
            if timeout is not None and timeout <= 0:
                rung = inbox.bell.acquire(False)  # no sleep: GIL time like the rest
            else:
                # The bracket holds the lock's wait alone (GIL released), not a Python
                # frame around it (Inbox.wait): what it leaves out is only what the
                # thread did without the GIL.
                acquire = inbox.bell.acquire
                asleep_ns = thread_time_ns()
                rung = acquire(True, -1 if timeout is None else timeout)
                self._asleep_cpu_ns += thread_time_ns() - asleep_ns
            self._wake_ns = 0
            if not rung and wake == _INF and not inbox and not posted:
                raise StallError(
                    f"{self._pending} thread job(s) gave no answer for "
                    f"{self._stall_timeout_s:g} s and no timer is due"
                )
        while True:
            # the earliest of the two heaps ((time, priority, id): no ties)
            if ran:
                ran = False
            elif quiet and (not queue_ or quiet[0] < queue_[0]):
                at, _prio, _eid, call = heappop(quiet)
                self._now = at
                call.fn(call.arg)
            else:
                at, _prio, _eid, event = queue_[0]
                if type(event) is not _Call:
                    super().step()  # a SimPy event: its machinery, and one per step
                    return
                heappop(queue_)
                self._now = at
                event.fn(event.arg)
            if posted:
                return  # an answer came: the next step files it among the calls first
            while queue_ and type(head := queue_[0][3]) is _Call and not head.live:
                heappop(queue_)
            while quiet and not quiet[0][3].live:
                heappop(quiet)
            if not (
                (queue_ and queue_[0][0] <= wall and type(queue_[0][3]) is _Call)
                or (quiet and quiet[0][0] <= wall)
            ):
                return
