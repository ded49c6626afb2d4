"""The simulated threads of a point: the simulation thread (harness) and the load workers.

They mirror what real mode runs (sim.runtime.env, sim.runtime.workers): the
simulation thread sleeps without the GIL until a timer is due or a worker posts
to its inbox, wakes (OS wake-up or timer lateness), takes the GIL and does its
work one item at a time, keeping the GIL while items are waiting; a load worker
sleeps on the job queue, wakes, takes the GIL, runs the request's CPU stages
(GIL-held part, then GIL-free parts, taking the GIL back after each) and posts
the result to the simulation thread's inbox.

Each thread is a state machine on :class:`sim.model.loop.Loop` (no SimPy): its
steps are methods, and every wait (a wake-up, the GIL, a CPU run) names the
step that follows it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from sim.model.cores import Cores
from sim.model.gil import SimGil
from sim.model.loop import Loop
from sim.model.nogil import LOAD_THREAD_PREFIX
from sim.store.clock import QUIET_SLACK_S

__all__ = ["SIM_THREAD", "Harness", "HeldParts", "ModelJob", "ModelWorkers"]

SIM_THREAD = "kvsim-sim"

#: What a posted item calls once the simulation thread has done it: ``done(arg)``.
Done = Callable[[Any], None]


class Harness:
    """The simulation thread: serves posted items one at a time, holding the GIL."""

    __slots__ = (
        "_cores",
        "_current",
        "_deferred",
        "_deferred_cb",
        "_gil",
        "_got_cb",
        "_item_done_cb",
        "_items",
        "_loop",
        "_naps",
        "_sleeping",
        "_woken_cb",
        "cpu_s",
    )

    def __init__(self, loop: Loop, gil: SimGil) -> None:
        self._loop = loop
        self._gil = gil
        self._cores = gil.cores
        #: (cost, done, arg, own) per item; ``own``: ``done`` is this thread's own next step.
        self._items: deque[tuple[float, Done | None, Any, bool]] = deque()
        self._sleeping = True
        #: The item in hand, as posted (its tuple kept, not a new one per item).
        self._current: tuple[float, Done | None, Any, bool] = (0.0, None, None, False)
        #: Times the thread went to sleep (tells a deferred wake-up whether it is stale),
        #: and whether one is set for this sleep.
        self._naps = 0
        self._deferred = False
        self.cpu_s = 0.0
        # Its steps as callbacks, bound once: compiled code makes a new bound method object
        # each time it reads ``self._woken`` as a value (several per request).
        self._woken_cb: Done = self._woken
        self._deferred_cb: Done = self._deferred_wake
        self._got_cb: Done = self._got
        self._item_done_cb: Done = self._item_done

    def start(self) -> None:
        """Nothing to start: the thread begins asleep, waiting for its first item."""

    def post(
        self,
        cost_s: float,
        late: Callable[[], float] | None,
        done: Done | None = None,
        arg: Any = None,
        own: bool = False,
    ) -> None:
        """Ask the simulation thread to do ``cost_s`` of work now (a timer fell due or a
        message arrived); ``late()`` draws how long it takes to wake if asleep. Once the
        work is done, ``done(arg)`` is called: after the thread has moved on (another
        thread's continuation), or with ``own`` before, as the thread's own next step, so
        that what it posts already due is done in the same wake-up, holding the GIL (real
        mode's event loop runs every event due before it sleeps; issue 40: woken again
        ~0.1 ms after each hand-over, the modelled thread asked for the GIL just after a
        load thread had taken it, and forced that hold off at its very end)."""
        self._items.append((cost_s, done, arg, own))
        if self._sleeping:
            self._sleeping = False
            self._loop.after(late() if late is not None else 0.0, self._woken_cb)

    def defer(self, cost_s: float, wake_s: float) -> None:
        """``cost_s`` of work the thread does when it next wakes, or ``wake_s`` from now
        at the latest: a quiet timer of real mode (sim.store.quiet_clock.QuietClock), which
        the thread does not wake for. Items run in the order they came."""
        self._items.append((cost_s, None, None, False))
        if self._sleeping and not self._deferred:
            self._deferred = True
            self._loop.after(wake_s, self._deferred_cb, self._naps)

    def _deferred_wake(self, nap: int) -> None:
        if nap == self._naps and self._sleeping:  # nothing woke it meanwhile
            self._sleeping = False
            self._woken()

    def _woken(self, _arg: Any = None) -> None:
        if self._gil.take(SIM_THREAD):  # a free GIL: on at once, no continuation
            self._got(True)
        else:
            self._gil.acquire(SIM_THREAD, self._got_cb)

    def _got(self, free: bool | None = None) -> None:
        # Called last in a loop entry (the wake-up, or the GIL's hand-off): the first
        # item may be done at once (GIL.run_instant; on a GIL just found ``free`` nobody
        # waits, so only the cores can say no). There is one: only this thread takes
        # items, and it sleeps only once they are all done.
        item = self._current = self._items.popleft()
        cost = item[0]
        if cost > 0:
            self.cpu_s += cost
            gil = self._gil
            if not (self._cores.instant(cost) if free else gil.run_instant(SIM_THREAD, cost)):
                gil.run(SIM_THREAD, cost, self._item_done_cb)
                return
        self._item_done()

    def _sleep(self) -> None:
        self._sleeping = True
        self._naps += 1
        self._deferred = False

    def _next(self) -> None:
        items = self._items
        if not items:
            self._gil.release(SIM_THREAD)
            self._sleep()
            return
        item = self._current = items.popleft()
        cost = item[0]
        if cost > 0:
            self.cpu_s += cost
            self._gil.run(SIM_THREAD, cost, self._item_done_cb)
            return
        self._item_done(None)

    def _item_done(self, _arg: Any = None) -> None:
        _, done, arg, own = self._current
        if own and done is not None:  # its own next step first: what it posts is due now
            done(arg)
            done = None
        self._next()  # the thread moves on (or goes to sleep) before the poster resumes
        if done is not None:
            done(arg)


class HeldParts:
    """A thread's hold run in parts, a waiting thread let in at each part's end
    (SimGil.pass_on): library code's own GIL releases in mid-hold (NumPy's ufuncs,
    torch's operators), measured per request by calibrate (sim.calibration.measure_yields)."""

    __slots__ = ("_gil", "_part_cb", "_rest", "_resume_cb", "_then", "_who")

    def __init__(self, gil: SimGil, thread: str) -> None:
        self._gil = gil
        self._who = thread
        #: The parts still to run, last first.
        self._rest: list[float] = []
        self._then: Done = _nothing
        self._part_cb: Done = self._part
        self._resume_cb: Done = self._resume

    def run(self, hold_s: float, lead_s: float, points: tuple[float, ...], then: Done) -> None:
        """Run ``lead_s`` then ``hold_s`` of held CPU, the hold cut at ``points``
        (fractions, rising, at least one), then ``then(None)``, holding the GIL."""
        at = [f * hold_s for f in points]
        rest = [b - a for a, b in zip(at, [*at[1:], hold_s], strict=True)]
        rest.reverse()
        self._rest = rest
        self._then = then
        self._gil.run(self._who, lead_s + at[0], self._part_cb)

    def _part(self, _arg: Any = None) -> None:
        wake = self._gil.pass_on(self._who, self._resume_cb)
        if wake is None:
            self._resume()
        elif wake > 0:  # the next part ran on, GIL-free, while the waiter woke
            rest = self._rest
            rest[-1] = max(0.0, rest[-1] - wake)

    def _resume(self, _arg: Any = None) -> None:
        rest = self._rest
        work = rest.pop()
        self._gil.run(self._who, work, self._part_cb if rest else self._then)


def _nothing(_arg: Any = None) -> None:
    """HeldParts' ``then`` before its first run."""


class ModelJob:
    """One request's CPU stages; the worker fills in the timings (seconds of model time)."""

    __slots__ = (
        "done",
        "end",
        "free_cpu_s",
        "free_sleep_s",
        "free_wall",
        "hold_s",
        "start",
        "thread",
        "yields",
    )

    def __init__(
        self,
        hold_s: float,
        free_cpu_s: float,
        free_sleep_s: float,
        done: Done,
        yields: tuple[float, ...] = (),
    ) -> None:
        self.hold_s = hold_s
        #: Where in the hold (fractions, rising) the thread lets a waiting thread take the
        #: GIL (sim.model.costs.ModelCosts.yield_points).
        self.yields = yields
        self.free_cpu_s = free_cpu_s
        self.free_sleep_s = free_sleep_s
        #: Called with the job when it ends (the answer is posted at that time).
        self.done = done
        self.start = 0.0
        self.end = 0.0
        self.free_wall = 0.0
        self.thread = ""


class _Worker:
    """One load thread's state machine."""

    __slots__ = (
        "_back_cb",
        "_finish_cb",
        "_got_cb",
        "_held_cb",
        "_parts",
        "_pool",
        "_post_cb",
        "_returned_cb",
        "_sleep_cb",
        "holding",
        "job",
        "name",
        "step_cb",
        "t0",
        "then",
    )

    def __init__(self, pool: ModelWorkers, name: str) -> None:
        self._pool = pool
        self.name = name
        self.holding = False
        self.job: ModelJob | None = None
        self.t0 = 0.0
        # Its steps as callbacks, bound once (see Harness); ``step_cb`` is what a queued
        # job's wake-up calls (ModelWorkers.submit).
        self.step_cb: Done = self.step
        self._got_cb: Done = self._got
        self._held_cb: Done = self._held
        self._parts = HeldParts(pool.gil, name)
        self._back_cb: Done = self._back
        self._returned_cb: Done = self._returned
        self._post_cb: Done = self._post
        self._sleep_cb: Callable[[], None] = self._sleep
        self._finish_cb: Callable[[], None] = self._finish
        #: What follows the GIL-free section in progress, once the GIL is back.
        self.then: Callable[[], None] = self._finish_cb

    def step(self, _arg: Any = None) -> None:
        """Take the next job, or go idle; also what the OS wake-up after a queued job
        calls (that job may have been taken meanwhile). Always last in a loop entry."""
        pool = self._pool
        if not pool.jobs:
            pool.idle.append(self)
            if self.holding:  # idle first: a hand-off that goes on at once may wake it
                self.holding = False
                pool.gil.release(self.name, tail=True)
            return
        if not self.holding:
            if not pool.gil.take(self.name):
                pool.gil.acquire(self.name, self._got_cb)
                return
            self.holding = True
            self._start(True)
            return
        self._start()

    def _got(self, _arg: Any = None) -> None:
        self.holding = True
        if not self._pool.jobs:  # taken by another worker while this one waited for the GIL
            self.step()
            return
        self._start()

    def _start(self, free: bool = False) -> None:
        pool = self._pool
        job = self.job = pool.jobs.popleft()
        job.thread = self.name
        # The thread's GIL-held work between jobs (real mode's post, get and the meter's
        # set-up: ModelWorkers.job_gap_s) comes first, and the job's start is stamped
        # after it, as the meter's is; it runs as one block with the hold (a drop
        # request during it is counted in the job's GIL wait, not in its queue).
        gap = pool.job_gap_s
        job.start = pool.loop.now + gap
        work = job.hold_s + gap
        if job.yields:  # the hold in parts, a waiting thread let in between
            self._parts.run(job.hold_s, gap, job.yields, self._held_cb)
            return
        # Last in a loop entry (see step): the hold may be done at once (on a GIL just
        # found ``free`` nobody waits, so only the cores can say no).
        if pool.cores.instant(work, True) if free else pool.gil.run_instant(self.name, work):
            self._held()
        else:
            pool.gil.run(self.name, work, self._held_cb)

    def _held(self, _arg: Any = None) -> None:
        job = self.job
        assert job is not None
        if job.free_cpu_s > 0:  # a nogil kernel: CPU on a core, without the GIL
            self._leave_gil(self._sleep_cb)
            self._pool.cores.run(job.free_cpu_s, self._back_cb)
            return
        self._sleep()

    def _sleep(self) -> None:
        job, pool = self.job, self._pool
        assert job is not None
        if job.free_sleep_s > 0:  # a GIL-free wait (no CPU), woken late like any sleep
            self._leave_gil(self._finish_cb)
            pool.loop.after(job.free_sleep_s + pool.sleep_late(), self._back_cb)
            return
        self._finish()

    def _leave_gil(self, then: Callable[[], None]) -> None:
        """Let the GIL go for a GIL-free section; ``then()`` follows once it is back."""
        self.t0 = self._pool.loop.now
        self.then = then
        self._pool.gil.release(self.name)

    def _back(self, _arg: Any = None) -> None:
        """The GIL-free section is over: queue for the GIL again (the convoy effect)."""
        gil = self._pool.gil
        if gil.take(self.name):
            self._returned()
        else:
            gil.acquire(self.name, self._returned_cb)

    def _returned(self, _arg: Any = None) -> None:
        job = self.job
        assert job is not None
        job.free_wall += self._pool.loop.now - self.t0
        self.then()

    def _finish(self) -> None:
        pool = self._pool
        assert self.job is not None
        self.job.end = pool.loop.now
        # The thread's GIL-held work after the meter's end and before the answer's post
        # (real mode's measure() tear-down, the outcome: ModelWorkers.post_s): the
        # transfer starts at the post, so it waits for it (issue 40: 15-45 µs measured).
        if pool.post_s > 0:
            pool.gil.run(self.name, pool.post_s, self._post_cb)
            return
        self._post()

    def _post(self, _arg: Any = None) -> None:
        job, pool = self.job, self._pool
        assert job is not None
        self.job = None
        # The answer is posted at the job's end (real mode's post_at): what follows the
        # job starts now, not once the simulation thread has noted it; and the thread is
        # not woken for it (sim.runtime.env.HybridEnvironment.post_at): it notes it when
        # it next wakes, 12 ms late at most (a quiet call). Woken for every answer, it
        # waited behind the next job's hold and forced a drop at the end of nearly every
        # hold of a busy worker (issue 40: GIL wait modelled 3.3 ms against 0.4 real).
        pool.harness.defer(pool.complete_s, QUIET_SLACK_S + pool.timer_late())
        job.done(job)
        self.step()


class ModelWorkers:
    """N load threads taking whole jobs from one FIFO queue (sim.runtime.workers)."""

    def __init__(
        self,
        loop: Loop,
        gil: SimGil,
        cores: Cores,
        harness: Harness,
        workers: int,
        wake: Callable[[], float],
        sleep_late: Callable[[], float],
        complete_s: float,
        timer_late: Callable[[], float],
        job_gap_s: float = 0.0,
        post_s: float = 0.0,
    ) -> None:
        self.loop = loop
        self.gil = gil
        self.cores = cores
        self.harness = harness
        self._n = workers
        self.wake = wake
        self.sleep_late = sleep_late
        self.complete_s = complete_s
        #: GIL-held CPU a load thread spends between two jobs, outside the hold it
        #: measures (sim.model.costs.Measured.job_gap_s; 0: not modelled). At a hold
        #: just over the switch interval it decides whether a waiter that began waiting
        #: as the job began is still waiting when the interval runs out (issue 40).
        self.job_gap_s = job_gap_s
        #: GIL-held CPU a load thread spends from a job's measured end to its answer's
        #: post, where what follows (the transfer) starts (sim.model.costs.Measured.post_s;
        #: 0: not modelled). Part of the job gap, which then holds only the rest.
        self.post_s = post_s
        #: A timed wait's lateness (the simulation thread's quiet calls).
        self.timer_late = timer_late
        self.jobs: deque[ModelJob] = deque()
        self.idle: deque[_Worker] = deque()

    def start(self) -> None:
        for i in range(self._n):
            self.idle.append(_Worker(self, f"{LOAD_THREAD_PREFIX}{i}"))

    def submit(self, job: ModelJob) -> None:
        self.jobs.append(job)
        if self.idle:
            self.loop.after(self.wake(), self.idle.popleft().step_cb)

    def submit_at(self, job: ModelJob, t: float) -> None:
        """As :meth:`submit`, for a job handed over before its time ``t`` (real mode's
        WorkerPool.run_at): it is queued then, and an idle load thread takes it up a
        timed sleep's lateness after, not a cross-thread wake-up's (it slept until then
        with the job in hand; one busy then takes it when free, as in real mode)."""
        if t <= self.loop.now:
            self.submit(job)
        else:
            self.loop.at(t, self._due, job)

    def _due(self, job: ModelJob) -> None:
        self.jobs.append(job)
        if self.idle:
            self.loop.after(self.sleep_late(), self.idle.popleft().step_cb)
