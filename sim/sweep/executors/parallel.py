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
process, so a point that crashes Python fails as it would have serially.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from sim.events import SweepEvents
from sim.process.lifeline import die_with_parent
from sim.rundir.layout import RepRun, read_status, write_status
from sim.sweep.executors.base import LOCAL_HOST, RunOne
from sim.sweep.identity import DataDigests
from sim.sweep.runner import RepOutcome, run_rep

__all__ = ["MIN_PARALLEL_REQUESTS", "MIN_PARALLEL_RUNS", "ParallelModelExecutor", "model_workers"]

#: Fewer model-mode point runs, or fewer planned requests in all, than these run in
#: the sweep's process: starting the workers (a fresh interpreter each, 1–2 s) would
#: cost more than it saves (model mode simulates some 10,000 requests a second).
MIN_PARALLEL_RUNS = 8
MIN_PARALLEL_REQUESTS = 40_000


def model_workers(reps: Sequence[RepRun]) -> int:
    """How many worker processes ``reps`` should run in: the usable cores when every run
    is a model-mode point and there are at least MIN_PARALLEL_RUNS of them planning
    MIN_PARALLEL_REQUESTS in all; else 1 (serial)."""
    if len(reps) < MIN_PARALLEL_RUNS or any(r.point.config.mode != "model" for r in reps):
        return 1
    if sum(r.point.config.workload.requests for r in reps) < MIN_PARALLEL_REQUESTS:
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
        try:
            futures = [pool.submit(_run, rep, *self._args) for rep in reps]
            for rep, fut in zip(reps, futures, strict=True):
                try:
                    outcome = fut.result()
                except BrokenProcessPool:
                    break
                events.started(rep, LOCAL_HOST)
                events.finished(rep, outcome)
                reported += 1
        except BaseException:
            from sim.process.signals import deferred_signals

            with deferred_signals():  # a second Ctrl-C must not leave runs unmarked
                _stop(pool)
                for rep, fut in zip(reps[reported:], futures[reported:], strict=False):
                    if _settle(rep, fut):
                        events.finished(rep, None)
            raise
        pool.shutdown(wait=True)
        if reported < len(reps):
            events.note(
                "a model-mode worker process died; the remaining points run in this process"
            )
            _serially(reps[reported:], events, self._run_one)


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


def _stop(pool: ProcessPoolExecutor) -> None:
    """End the workers now (they ignore SIGINT) and wait for them."""
    procs = list(getattr(pool, "_processes", {}).values())  # no public way before 3.14
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join()
    pool.shutdown(wait=True, cancel_futures=True)


def _serially(
    reps: Sequence[RepRun], events: SweepEvents, run_one: Callable[..., RepOutcome]
) -> None:
    from sim.sweep.executors.base import LocalExecutor

    LocalExecutor(run_one).run(reps, events)
