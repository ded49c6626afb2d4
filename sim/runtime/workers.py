"""WorkerPool: N real OS threads taking whole jobs from one FIFO queue.

This is how the upstream connector's load threads work: each request is one
job, taken by whichever thread is free. The pool is the pipeline's CPU
executor: anything else with the same ``submit`` could stand in for it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter_ns, sleep
from typing import Any

import simpy

from sim.instruments.gilmeter import JobTiming, measure
from sim.runtime.env import HybridEnvironment

__all__ = ["JobOutcome", "WorkerPool"]

_STOP = object()


@dataclass(frozen=True)
class JobOutcome:
    result: Any
    error: BaseException | None
    timing: JobTiming
    thread: str

    @property
    def ok(self) -> bool:
        return self.error is None


class WorkerPool:
    """Threads are started by :meth:`start` (not the constructor) and joined by :meth:`shutdown`."""

    def __init__(
        self,
        env: HybridEnvironment,
        workers: int,
        name: str = "kvsim-load",
        timed_answers: bool = False,
    ) -> None:
        """``timed_answers``: each answer runs on the simulation thread at the time the
        load thread posted it, holding the GIL again after its job (HybridEnvironment.
        post_at), not when the simulation thread picked it up: what follows starts when
        the load thread could start it, as in a real connector, whose load thread starts
        the transfer itself. (Timed at the post, not at the job's end: the load thread's
        own wait for the GIL in between is real; and a time taken while it holds the GIL
        is never one the simulation thread's clock has passed.)"""
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self._env = env
        self._timed = timed_answers
        self._n = workers
        self._name = name
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()  # no lock+condition per job
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        #: Whether :meth:`run` may queue a job: started and not stopping (a plain flag,
        #: read on every request's path; the event is what the load threads read).
        self._open = False

    @property
    def workers(self) -> int:
        return self._n

    @property
    def threads(self) -> list[threading.Thread]:
        return list(self._threads)

    def start(self) -> WorkerPool:
        if self._threads:
            raise RuntimeError("pool already started")
        for i in range(self._n):
            t = threading.Thread(target=self._loop, name=f"{self._name}-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        self._open = True
        return self

    def run(self, done: Callable[[JobOutcome], None], fn: Callable[..., Any], *args: Any) -> None:
        """Queue ``fn(*args)``; ``done(outcome)`` runs on the simulation thread after it."""
        self.run_at(0, done, fn, *args)

    def run_at(
        self, at_ns: int, done: Callable[[JobOutcome], None], fn: Callable[..., Any], *args: Any
    ) -> None:
        """As :meth:`run`, for a job not to start before ``at_ns`` (``perf_counter_ns``):
        the load thread that takes it sleeps until then, GIL released. A request handed
        over ahead of its planned time (sim.point.arrivals, ``lead_s``) starts when its
        load thread wakes for it, without the simulation thread waking to hand it over."""
        if not self._open:
            raise RuntimeError("pool is not running")
        self._env.expect()
        self._jobs.put((at_ns, done, fn, args))

    def submit(self, fn: Callable[..., Any], *args: Any) -> simpy.Event:
        """Queue ``fn(*args)``; the returned event succeeds with a :class:`JobOutcome`."""
        event = simpy.Event(self._env)
        self.run(event.succeed, fn, *args)
        return event

    def _loop(self) -> None:
        name = threading.current_thread().name
        while True:
            item = self._jobs.get()
            if item is _STOP:
                return
            at_ns, done, fn, args = item
            ahead_ns = at_ns - perf_counter_ns()
            if ahead_ns > 0:
                sleep(ahead_ns / 1e9)
            if self._stopping.is_set():
                continue
            result, error, timing = measure(fn, *args)
            if self._timed:  # timed here, holding the GIL again, as the post itself
                self._env.post_at(done, JobOutcome(result, error, timing, name), perf_counter_ns())
            else:
                self._env.post(done, JobOutcome(result, error, timing, name))

    def shutdown(self, timeout_s: float = 10.0) -> list[str]:
        """Stop taking jobs and join the threads; returns the names of threads still stuck."""
        self._open = False
        self._stopping.set()
        for _ in self._threads:
            self._jobs.put(_STOP)
        stuck = []
        for t in self._threads:
            t.join(timeout_s / max(1, len(self._threads)))
            if t.is_alive():
                stuck.append(t.name)
        self._threads = [t for t in self._threads if t.is_alive()]
        return stuck

    def __enter__(self) -> WorkerPool:
        return self.start()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        # After an error (a watchdog, Ctrl-C) a worker may be stuck: don't wait long for it.
        self.shutdown(1.0 if exc_type is not None else 10.0)
