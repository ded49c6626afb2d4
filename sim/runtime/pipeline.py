"""The load pipeline of one request: arrival -> queue -> CPU stages -> transfer -> done.

Independent of how time advances: ``cpu`` is anything with
``submit(fn, *args) -> Event[JobOutcome]`` (the real WorkerPool in a point run),
and every timestamp of record is taken where the thing
happens — CPU stages in the worker, the rest on the simulation thread. Queue
time and latency count from the request's *planned* arrival, so that time the
harness spent getting round to it is part of the latency (no coordinated omission).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol

import numpy as np
import simpy

from connectors.base import AddressVariant
from sim.config.geometry import GeometryConfig
from sim.errors import WatchdogError
from sim.instruments.stages import GC, OTHER, StageTimes
from sim.runtime.env import HybridEnvironment
from sim.runtime.records import RequestRecord
from sim.store.base import LoadStore, cpu_stages
from sim.workload.plan import PlannedRequest, request_bytes

__all__ = ["CpuExecutor", "LoadPipeline", "WatchdogError", "cpu_stages"]


class CpuExecutor(Protocol):
    def submit(self, fn: Callable[..., Any], *args: Any) -> simpy.Event: ...


def _record_stages(rec: RequestRecord, st: StageTimes) -> None:
    """The hold by stage; anything before the first mark is in ``keys`` (see stages)."""
    rec.hold_keys_ms = (st.of("keys") + st.of(OTHER)) / 1e6
    rec.hold_addresses_ms = st.of("addresses") / 1e6
    rec.hold_free_ms = st.of("free") / 1e6
    rec.hold_gc_ms = st.of(GC) / 1e6
    rec.gc_gen0, rec.gc_gen1, rec.gc_gen2 = st.gc_counts
    rec.gc_addresses = st.gc_in.get("addresses", 0)


class LoadPipeline:
    def __init__(
        self,
        env: HybridEnvironment,
        cpu: CpuExecutor,
        store: LoadStore,
        variants: Sequence[AddressVariant],
        handler: str,
        geometry: GeometryConfig,
        on_done: Callable[[RequestRecord], None],
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
        # Per-request figures that depend on the token count only, computed once each.
        self._sizes: dict[int, tuple[int, int]] = {}
        cfg = store.config
        self._faulty = cfg.kind == "model" and (cfg.fail_prob > 0 or cfg.stall_prob > 0)

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
                raise WatchdogError(
                    f"request {request_id}: CPU stages still running after "
                    f"{limit:g} s (limits.request_timeout_s); a worker hangs"
                )

    def handle(self, req: PlannedRequest, at_s: float) -> Generator[Any, Any, RequestRecord]:
        """SimPy process body of one request planned to arrive at run time ``at_s``."""
        env = self._env
        injected_ns = time.perf_counter_ns()
        arrival_ns = env.origin_ns + round(at_s * 1e9)
        sizes = self._sizes.get(req.tokens)
        if sizes is None:
            geo = self._geometry
            sizes = (req.chunks(geo) * geo.kv_groups, request_bytes(geo, req.tokens))
            self._sizes[req.tokens] = sizes
        rec = RequestRecord(
            request_id=req.request_id,
            tokens=req.tokens,
            chunks=sizes[0],
            bytes=sizes[1],
            arrival_s=at_s,
            injected_s=env.to_run_time(injected_ns),
            # Never negative: the environment processes nothing before its time.
            inject_lag_ms=max(0, injected_ns - arrival_ns) / 1e6,
            trace_line=req.trace_line,
        )
        planned = req.job(self._geometry, self._job_gen)
        job, admit_wait_s = yield from self._store.admit(planned)  # a real store: its blocks
        submitted = self._cpu.submit(self._store.stage, self._variants, self._handler, job)
        self._staging[req.request_id] = env.now
        outcome = yield submitted
        del self._staging[req.request_id]
        t = outcome.timing
        rec.thread = outcome.thread
        rec.start_s = env.to_run_time(t.start_ns)
        rec.cpu_done_s = env.to_run_time(t.end_ns)
        rec.queue_ms = (t.start_ns - arrival_ns) / 1e6
        rec.stage_wall_ms = t.wall_ns / 1e6
        rec.gil_hold_ms = t.hold_ns / 1e6
        rec.gil_wait_ms = t.wait_ns / 1e6
        if t.stages is not None:
            _record_stages(rec, t.stages)
        if outcome.error is not None:
            rec.status = "failed"
            err = outcome.error
            rec.error = f"{type(err).__name__}: {err}".splitlines()[0][:300]
            rec.attempts = 0
        else:
            faults = np.random.default_rng([req.job_seed, 1]) if self._faulty else None
            xfer = yield from self._store.transfer(rec.bytes, outcome.result, job, faults)
            rec.store_wait_ms = (admit_wait_s + xfer.waited_s) * 1e3
            rec.attempts = xfer.attempts
            rec.verified_blocks = xfer.verified_blocks
            if xfer.error is None:
                rec.status = "ok"
            else:
                rec.status = "failed"
                rec.error = f"{type(xfer.error).__name__}: {xfer.error}".splitlines()[0][:300]
        self._store.release(job)
        done_ns = time.perf_counter_ns()
        if outcome.error is None:
            if xfer.transfer_ms is None:  # modelled: from the end of the CPU stages
                rec.transfer_ms = (done_ns - t.end_ns) / 1e6
                rec.transfer_bytes = rec.bytes if xfer.error is None else 0
            else:  # real: the get, measured in the load thread (part of its job)
                rec.transfer_ms = xfer.transfer_ms
                rec.stage_wall_ms -= xfer.transfer_ms
                rec.transfer_bytes = xfer.transfer_bytes or 0
        rec.done_s = env.to_run_time(done_ns)
        rec.latency_ms = (done_ns - arrival_ns) / 1e6
        self._on_done(rec)
        return rec
