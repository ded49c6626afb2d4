"""Model-mode point runs on every core: worker processes, results taken in order.

A model-mode point is plain simulation (no threads, no wall clock, nothing timed),
so running several at once changes none of its numbers — unlike a real-mode
point, which measures time and therefore always runs alone. A sweep of many
model points runs them in ``workers`` processes (``spawn``: a fresh interpreter
each, nothing inherited from the sweep's threads). Each worker runs a point
exactly as the sweep would in its own process (``run_rep``: a clean directory,
the spec, the point's files, ``status.json`` last); the sweep takes the results
in the order the points were planned, so its events, progress and combined
tables are those of a serial run, byte for byte.

Ctrl-C or SIGTERM: the workers ignore SIGINT (the sweep decides), so the
sweep stops them (SIGTERM: they end at once), marks every point run they had
not finished ``interrupted``, reports each, and re-raises — what the serial
executor does. A worker that dies (a crash of the interpreter) breaks the pool:
the runs not yet reported then run one after the other in the sweep's own
process, so a point that crashes Python fails as it would have serially. No
result from any worker for the points' budget (sim.sweep.deadline: a worker stopped
by SIGSTOP, or hung) ends the workers: the run awaited fails with that reason and
the rest run here too. Every wait on a worker is bounded.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from sim.events import RepOutcome, SweepEvents
from sim.process.lifeline import die_with_parent
from sim.process.signals import deferred_signals
from sim.rundir.layout import RepRun, read_status, write_status
from sim.sweep.deadline import Deadline, over_budget_error, wait_bound_s
from sim.sweep.executors.base import LOCAL_HOST, LocalExecutor, RunOne
from sim.sweep.identity import DataDigests
from sim.sweep.runner import TERMINATE_GRACE_S, run_rep

__all__ = [
    "MIN_PARALLEL_REQUESTS",
    "ParallelModelExecutor",
    "model_workers",
]

#: Fewer planned requests in all than this run in the sweep's process. Two workers pay
#: for their start (a fresh interpreter each, ~1 s) once N/r > s + N/(2r), N > 2rs: at
#: model mode's ~10,000 requests a second, 20,000. The rule counts the requests in all,
#: never how many runs hold them or how long each is: then the sweep's process shape, and
#: with it the run's memory (every process counted), is the same from that floor on at any
#: request count (issue 42: a 3-repeat point ran serially up to 600,000 requests and in
#: two workers past them, and its tree's peak RSS went from 87 to 231 MB). A sweep of
#: few runs on more cores than it has loses at most one run's share to the imbalance.
MIN_PARALLEL_REQUESTS = 20_000


def model_workers(reps: Sequence[RepRun]) -> int:
    """How many worker processes ``reps`` should run in: the usable cores (at most one a
    run) when every run is a model-mode point, there are two or more, and they plan
    MIN_PARALLEL_REQUESTS in all; else 1 (serial)."""
    if len(reps) < 2 or any(r.point.config.mode != "model" for r in reps):
        return 1
    planned = sum(r.point.config.workload.requests for r in reps)
    if planned < MIN_PARALLEL_REQUESTS:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, len(reps)))


def _worker_init(parent: int) -> None:
    """The sweep handles Ctrl-C; a worker ends at SIGTERM, and when the sweep dies — also
    when the sweep died while this worker's interpreter started (sim.process.lifeline):
    then it ends here, before it takes a point, and its end closes what it held of the
    pool's and the resource tracker's pipes, so the tracker ends too."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not die_with_parent(parent):
        os._exit(1)


def _run(
    rep: RepRun,
    run_dir: Path,
    columns: list[str],
    source: str,
    host: dict[str, Any] | None,
    planned: tuple[DataDigests | None, str],
) -> RepOutcome:
    digests, run_hash = planned
    return run_rep(
        rep, run_dir, columns, None, source=source, host=host, digests=digests, run_hash=run_hash
    )


class ParallelModelExecutor:
    """Model-mode point runs in ``workers`` processes, reported in planned order."""

    name = "local"

    def __init__(
        self,
        workers: int,
        run_dir: Path,
        columns: Sequence[str],
        source: str,
        host: dict[str, Any] | None,
        run_one: RunOne,
        planned: tuple[DataDigests | None, str] = (None, ""),
    ) -> None:
        """``planned``: the sweep's data-file hashes and config hash, for the specs."""
        self._workers = workers
        self._args = (run_dir, list(columns), source, host, planned)
        #: Runs a point here, for what a broken pool leaves.
        self._run_one = run_one

    def run(self, reps: Sequence[RepRun], events: SweepEvents) -> None:
        ctx = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(
            self._workers, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),)
        )
        futures: list[Future[RepOutcome]] = []
        reported = 0
        why = "a model-mode worker process died"
        # No result from any worker for this long means one is stopped or hung.
        bound_s = max(wait_bound_s(r.point.config.limits) for r in reps) if reps else 0.0
        try:
            futures = [pool.submit(_run, rep, *self._args) for rep in reps]
            for rep, fut in zip(reps, futures, strict=True):
                hung = False
                try:
                    outcome = _result(fut, futures, bound_s)
                except BrokenProcessPool:
                    break
                except _Hung:  # the workers are ended; this run failed, the rest run here
                    why, hung = "a model-mode worker gave no result within its budget", True
                    _end(pool, 0.0)
                    outcome = _failed_over_budget(rep, bound_s)
                events.started(rep, LOCAL_HOST)
                events.finished(rep, outcome)
                reported += 1
                if hung:
                    break
        except BaseException:
            with deferred_signals():  # a second Ctrl-C must not leave runs unmarked
                _end(pool, 0.0)
                for rep, fut in zip(reps[reported:], futures[reported:], strict=False):
                    if _settle(rep, fut):
                        events.finished(rep, None)
            raise
        _end(pool, TERMINATE_GRACE_S)
        if reported < len(reps):
            events.note(f"{why}; the remaining points run in this process")
            _serially(reps[reported:], events, self._run_one)


class _Hung(Exception):
    """No worker returned a result for longer than the points' budget."""


def _result(fut: Future[RepOutcome], futures: Sequence[Future[Any]], bound_s: float) -> RepOutcome:
    """``fut``'s outcome, waited for while the pool makes progress: _Hung once no future
    at all has ended for ``bound_s`` (a worker stopped by SIGSTOP, or hung)."""
    last_done, last_change = -1, time.monotonic()
    while True:
        try:
            return fut.result(timeout=min(1.0, bound_s))
        except FuturesTimeout:
            done = sum(f.done() for f in futures)
            if done != last_done:
                last_done, last_change = done, time.monotonic()
            elif time.monotonic() - last_change > bound_s:
                raise _Hung from None


def _failed_over_budget(rep: RepRun, bound_s: float) -> RepOutcome:
    """Mark ``rep`` failed at its bound (unless its worker finished it just before)."""
    status = read_status(rep.dir)
    if status is not None and status.get("status") == "ok":
        return RepOutcome("ok", "", 0.0)
    error = over_budget_error(Deadline(bound_s))
    write_status(rep.dir, "failed", error=error)
    return RepOutcome("failed", error, bound_s)


def _settle(rep: RepRun, fut: Future[RepOutcome]) -> bool:
    """After the workers were stopped: mark ``rep`` interrupted if a worker had begun it
    and not finished it; say whether this session touched it (then it is reported).

    A worker begins a run by clearing its directory, so a directory without a status
    is a run cut short. One with a status says how it ended: this session's end, or,
    for a run the workers had not begun yet, an earlier session's — left as it is and
    not reported, as the serial executor leaves the runs it did not reach.
    """
    if fut.cancelled() or not (fut.running() or fut.done()) or not rep.dir.is_dir():
        return False  # never handed to a worker
    status = read_status(rep.dir)
    if status is None:
        write_status(rep.dir, "interrupted", error="stopped by Ctrl-C or SIGTERM")
        return True
    if fut.done() and fut.exception() is None:
        return True  # a worker finished it (ok or failed) before the sweep was stopped
    return status.get("status") == "ok"


def _end(pool: ProcessPoolExecutor, grace_s: float) -> None:
    """Shut the pool down: idle workers get ``grace_s`` to leave on their own, then
    SIGTERM (and SIGCONT, for one stopped by SIGSTOP), then SIGKILL; every wait is
    bounded, so a stopped worker cannot hang the sweep's end."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # none public before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    end = time.monotonic() + grace_s
    for proc in procs:
        proc.join(max(0.0, end - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            with contextlib.suppress(ProcessLookupError, TypeError):
                os.kill(proc.pid, signal.SIGCONT)  # type: ignore[arg-type]
    for proc in procs:
        proc.join(TERMINATE_GRACE_S)
        if proc.is_alive():
            proc.kill()
            proc.join(TERMINATE_GRACE_S)


def _serially(
    reps: Sequence[RepRun], events: SweepEvents, run_one: Callable[..., RepOutcome]
) -> None:
    LocalExecutor(run_one).run(reps, events)
