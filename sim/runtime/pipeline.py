"""The load pipeline of one request: arrival -> queue -> CPU stages -> transfer -> done.

Independent of how time advances: ``cpu`` is anything with ``run(done, fn, *args)``
that calls ``done(JobOutcome)`` on the simulation thread (the real WorkerPool in a
point run), and every timestamp of record is taken where the thing happens — CPU
stages in the worker, the rest on the simulation thread. Queue time and latency
count from the request's *planned* arrival, so that time the harness spent getting
round to it is part of the latency (no coordinated omission).

A request is a small state machine whose steps are callbacks (:class:`_Request`),
not a SimPy process: a process cost about eight SimPy events and as many generator
resumes per request on the simulation thread, whose GIL time competes with the
load threads being measured (``harness_us_per_request``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from connectors.base import AddressVariant, LoadJob
from connectors.contract import ContractError
from connectors.plugin_trace import CONTRACT_DOC, ending, plugin_line
from sim.config.geometry import GeometryConfig
from sim.errors import PluginFault, WatchdogError
from sim.instruments.stages import GC, OTHER, StageTimes
from sim.point.records import RequestRecord, end_record, error_line
from sim.process.interpreter import gil_enabled
from sim.runtime.env import HybridEnvironment
from sim.runtime.workers import JobOutcome
from sim.store.base import LoadStore, cpu_stages
from sim.store.model import TransferOutcome
from sim.workload.plan import PlannedRequest, request_bytes

__all__ = [
    "JOB_BUDGET_BYTES",
    "CpuExecutor",
    "LoadPipeline",
    "WatchdogError",
    "cpu_stages",
    "prepare_jobs",
    "variant_fault",
]

#: Memory the jobs built before the load may take (block hashes and block ids); requests
#: past it get theirs built at arrival, on the simulation thread.
JOB_BUDGET_BYTES = 256 * 2**20


class CpuExecutor(Protocol):
    def run_at(
        self, at_ns: int, done: Callable[[JobOutcome], None], fn: Callable[..., Any], *args: Any
    ) -> None: ...


def _record_stages(rec: RequestRecord, st: StageTimes, gil_on: bool) -> None:
    """The hold by stage (with the GIL on: there is none to split with it off); anything
    before the first mark is in ``keys`` (see stages)."""
    if gil_on:
        rec.hold_keys_ms = (st.of("keys") + st.of(OTHER)) / 1e6
        rec.hold_addresses_ms = st.of("addresses") / 1e6
        rec.hold_free_ms = st.of("free") / 1e6
        rec.hold_gc_ms = st.of(GC) / 1e6
    rec.gc_gen0, rec.gc_gen1, rec.gc_gen2 = st.gc_counts
    rec.gc_addresses = st.gc_in.get("addresses", 0)


def variant_fault(variant: AddressVariant, request_id: int, error: BaseException) -> PluginFault:
    """The point's end, in one line, when a request's CPU stages broke what a run needs:
    a result outside the list contract (ContractError), or variant code that tried to end
    the process (SystemExit, KeyboardInterrupt: on a load thread, only the job's own code
    raises them). Either is a bug in the variant, not a failed request to count."""
    cls = type(variant)
    module = sys.modules.get(cls.__module__)
    where = getattr(module, "__file__", None) or cls.__module__
    if isinstance(error, ContractError):
        return PluginFault(f"{where}: {error}; the point is stopped ({CONTRACT_DOC})")
    line = plugin_line(error, str(where))
    at = f" ({line})" if line else ""
    return PluginFault(
        f"{where}: variant {cls.name!r}, request {request_id}: {ending(error)}{at} in a load "
        "thread; a variant must not end or interrupt kvsim, the point is stopped"
    )


class LoadPipeline:
    def __init__(
        self,
        env: HybridEnvironment,
        cpu: CpuExecutor,
        store: LoadStore,
        variants: Sequence[AddressVariant],
        handler: str,
        geometry: GeometryConfig,
        on_done: Callable[[int], None],
        request_timeout_s: float | None = None,
    ) -> None:
        self._env = env
        self._cpu = cpu
        self._store = store
        self._variants = list(variants)
        self._handler = handler
        self._geometry = geometry
        self._on_done = on_done
        self._timeout_s = request_timeout_s
        #: Requests whose CPU stages run, oldest first (dicts keep insertion order): when
        #: each was handed over, for the one watchdog (no timer per request).
        self._staging: dict[int, float] = {}
        self._job_gen = np.random.Generator(np.random.PCG64(0))  # reseeded for each job
        # Bytes moved by a request of so many tokens, computed once per token count.
        self._bytes: dict[int, int] = {}
        self._finished: list[_Request] = []
        self._jobs: dict[int, LoadJob] = {}
        cfg = store.config
        self._faulty = cfg.kind == "model" and (cfg.fail_prob > 0 or cfg.stall_prob > 0)
        # With the GIL off a request has no GIL hold or wait: those columns stay empty
        # (sim.instruments.threadtime; a point whose GIL changes state fails, sim.sweep.child).
        self._gil_on = gil_enabled()
        #: Read once: the store's CPU stages and the clock's zero, on every request's path.
        self._stage = store.stage
        self._t0_ns = env.t0_ns
        self._immediate = store.immediate  # admit and release skipped (LoadStore.immediate)

    @property
    def gil_on(self) -> bool:
        """Whether the GIL was on when the pipeline was built (its records say so)."""
        return self._gil_on

    def request_bytes(self, tokens: int) -> int:
        nbytes = self._bytes.get(tokens)
        if nbytes is None:
            nbytes = self._bytes[tokens] = request_bytes(self._geometry, tokens)
        return nbytes

    def watchdog(self) -> Generator[Any, Any, None]:
        """SimPy process body: end the run when a request's CPU stages outlast the limit.

        One process for the whole load, asleep until the oldest running request's
        deadline, instead of a timer and a condition per request (the harness's cost).
        """
        if self._timeout_s is None:
            return
        env, limit = self._env, self._timeout_s
        while True:
            if not self._staging:
                yield env.timeout(limit)
                continue
            request_id, since = next(iter(self._staging.items()))
            late = since + limit - env.now
            if late > 0:
                yield env.timeout(late)
            else:
                cls = type(self._variants[0])
                module = sys.modules.get(cls.__module__)
                where = getattr(module, "__file__", None) or cls.__module__
                raise WatchdogError(
                    f"request {request_id}: CPU stages still running after "
                    f"{limit:g} s (limits.request_timeout_s); a worker hangs in variant "
                    f"{cls.name!r} ({where})"
                )

    def adopt(self, jobs: dict[int, LoadJob]) -> int:
        """Take jobs :func:`prepare_jobs` built before (before the point's heap settled:
        sim.runtime.point); returns how many the pipeline holds."""
        self._jobs.update(jobs)
        return len(self._jobs)

    def inject(
        self, req: PlannedRequest, at_s: float, then: Callable[[float], None] | None = None
    ) -> None:
        """Hand over a request planned to arrive at run time ``at_s`` (call it then, as
        soon as the simulation thread can, or ahead of it: its load thread keeps it until then);
        ``then(run time it was done)`` once it is done."""
        _Request(self, req, at_s, then)

    def records(self) -> Iterator[RequestRecord]:
        """The finished requests' rows (requests.csv), by request id, one at a time: built
        after the load, from what each step noted during it, so that the bookkeeping is not
        the simulation thread's GIL time while it measures."""
        self._finished.sort(key=lambda r: r.req.request_id)
        for r in self._finished:
            yield r.record(self)


def prepare_jobs(
    requests: Iterable[PlannedRequest],
    geometry: GeometryConfig,
    budget_bytes: int = JOB_BUDGET_BYTES,
) -> dict[int, LoadJob]:
    """The jobs of the first requests, built before the load, up to ``budget_bytes``.

    A job (block hashes and ids, ~60 µs for 131,072 tokens) built at arrival is the
    simulation thread's GIL time in the middle of the load it measures; built here it
    is not. Past the budget, jobs are built at arrival, as the plan allows. A job is the
    same whichever generator builds it (reseeded from the request's seed)."""
    gen = np.random.Generator(np.random.PCG64(0))  # reseeded for each job
    jobs: dict[int, LoadJob] = {}
    used = 0
    for req in requests:
        used += req.job_nbytes(geometry)
        if used > budget_bytes:
            break
        jobs[req.request_id] = req.job(geometry, gen)
    return jobs


class _Request:
    """One request's steps: admitted by the store, CPU stages on a load thread, the
    transfer, the end. Each runs on the simulation thread and only notes what happened
    (timestamps, outcomes); :meth:`record` makes the row after the load. A finished
    request keeps only those notes until then: its job (hashes and block tables, about
    4.6 KB at 8,600 tokens: PlannedRequest.job_nbytes) and its CPU stages' result go as
    it ends, so that a long real point holds a few hundred bytes per finished request.

    What it keeps is four objects the cyclic collector tracks (itself, its timing, the
    timing's stages, the store's outcome: the timing and the stages are slotted, without a
    ``__dict__`` each, and their dicts of numbers are not tracked): every container that
    survives counts toward the next full collection, which scans the whole process on the
    thread that allocates — this one, in the middle of the load it measures (15–45 ms in
    the bench's process; a 2 s `kvsim bench harness` run holds none either way, but a long
    point keeps a finished request per request until its end)."""

    __slots__ = (
        "at_s",
        "done_ns",
        "error",
        "injected_ns",
        "job",
        "p",
        "req",
        "then",
        "thread",
        "timing",
        "waited_s",
        "xfer",
    )

    def __init__(
        self,
        p: LoadPipeline,
        req: PlannedRequest,
        at_s: float,
        then: Callable[[float], None] | None,
    ) -> None:
        # Handed over ahead (sim.point.arrivals, lead_s): injected at its planned time,
        # when its load thread takes it up (WorkerPool.run_at); late: when handed over.
        now_ns = time.perf_counter_ns()
        planned_ns = p._env.origin_ns + round(at_s * 1e9)
        self.injected_ns = planned_ns if planned_ns > now_ns else now_ns
        self.p = p
        self.req = req
        self.at_s = at_s
        self.then = then
        self.xfer: TransferOutcome | None = None
        self.job: LoadJob | None = None
        job = p._jobs.pop(req.request_id, None)
        if job is None:
            job = req.job(p._geometry, p._job_gen)
        if p._immediate:
            self._admitted(job, 0.0)
        else:
            p._store.admit(job, self._admitted)  # a real store: its blocks

    def _admitted(self, job: LoadJob, waited_s: float) -> None:
        p = self.p
        self.job = job
        self.waited_s = waited_s
        # (handed over ahead, the watchdog counts from the hand-over: up to a lead early)
        p._staging[self.req.request_id] = p._env._now
        p._cpu.run_at(self.injected_ns, self._staged, p._stage, p._variants, p._handler, job)

    def _staged(self, outcome: JobOutcome) -> None:
        p = self.p
        del p._staging[self.req.request_id]
        self.timing, self.thread, self.error = outcome.timing, outcome.thread, outcome.error
        if outcome.error is not None:
            if isinstance(outcome.error, ContractError) or not isinstance(outcome.error, Exception):
                raise variant_fault(p._variants[0], self.req.request_id, outcome.error)
            self._finish(None)
            return
        job = self.job
        assert job is not None
        faults = np.random.default_rng([self.req.job_seed, 1]) if p._faulty else None
        nbytes = p.request_bytes(self.req.tokens)
        p._store.transfer(nbytes, outcome.result, job, faults, self._finish)

    def _finish(self, xfer: TransferOutcome | None) -> None:
        p = self.p
        self.xfer = xfer
        if not p._immediate:
            job = self.job
            assert job is not None
            p._store.release(job)
        self.job = None  # its block tables: not held until the load ends
        env = p._env
        if xfer is not None and xfer.transfer_ms is None:
            # Modelled: it ended at the time the model fixed (``now`` is that time, even
            # when the loop runs it late), not when the loop noted it.
            self.done_ns = p._t0_ns + round(env._now * 1e9)
        else:  # real, or failed in its CPU stages: when the load thread was done
            self.done_ns = self.timing.end_ns
        finished = p._finished
        finished.append(self)
        p._on_done(len(finished))
        if self.then is not None:
            self.then(env.to_run_time(self.done_ns))

    def record(self, p: LoadPipeline) -> RequestRecord:
        """The request's row, from what its steps noted."""
        req, env = self.req, p._env
        geo = p._geometry
        arrival_ns = env.origin_ns + round(self.at_s * 1e9)  # the planned arrival
        rec = RequestRecord(
            request_id=req.request_id,
            tokens=req.tokens,
            chunks=req.chunks(geo) * geo.kv_groups,
            bytes=p.request_bytes(req.tokens),
            arrival_s=self.at_s,
            injected_s=env.to_run_time(self.injected_ns),
            # Never negative: the environment processes nothing before its time.
            inject_lag_ms=max(0, self.injected_ns - arrival_ns) / 1e6,
            trace_line=req.trace_line,
        )
        t = self.timing
        rec.thread = self.thread
        rec.start_s = env.to_run_time(t.start_ns)
        rec.cpu_done_s = env.to_run_time(t.end_ns)
        rec.queue_ms = (t.start_ns - arrival_ns) / 1e6
        rec.stage_wall_ms = t.wall_ns / 1e6
        if p._gil_on:
            rec.gil_hold_ms = t.hold_ns / 1e6
            rec.gil_wait_ms = t.wait_ns / 1e6
        rec.thread_cpu_ms = t.cpu_ns / 1e6
        if t.run_wait_ns is not None:
            rec.core_wait_ms = t.run_wait_ns / 1e6
        if t.stages is not None:
            _record_stages(rec, t.stages, p._gil_on)
        err = self.error
        end_record(
            rec,
            env.to_run_time(self.done_ns),
            (self.done_ns - arrival_ns) / 1e6,
            None if err is not None else self.xfer,
            error_line(err) if err is not None else "",
            self.waited_s,
        )
        return rec
