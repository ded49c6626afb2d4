"""Run one experiment point in model mode: the same plan, pipeline and store, in simulated time.

Nothing here reads the wall clock or starts a thread, and nothing uses SimPy: the
point runs on model mode's own event loop (sim.model.loop), where each simulated
thread is a small state machine (SimPy's processes cost ~25 events per request
and capped model mode at a few thousand requests per second). The workload plan
(sim.workload.plan), the store's rules (sim.store.model, the same code as real
mode's, on this loop) and the records and summary (sim.point.records,
sim.point.metrics) are the ones real mode uses; the CPU stages, the
simulation thread, the probe and the engine loop are simulated threads whose
costs come from the calibration (sim.model.costs), and the GIL and the cores
are simulated resources (sim.model.gil, sim.model.cores).

Timestamps of record mirror real mode's, in run time (seconds since the load
started, after an engine-alone baseline: real mode's ``HybridEnvironment.set_origin``):
a request's arrival is its planned time, its injection when the simulation thread
handled it, its start when a worker began its CPU stages
(holding the GIL), its end when the transfer ended (the store model's time, which
real mode records too, however late its loop notes it); GIL hold is CPU time
holding the GIL, GIL wait the rest of the job's wall time outside GIL-free
sections (sim.instruments.gilmeter).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any, Final

import numpy as np

from sim import columns
from sim.config import Point
from sim.instruments.threadtime import ThreadTimes
from sim.model.calibration import Calibration
from sim.model.cores import WAKE_BURST_S, Cores
from sim.model.costs import Measured, ModelCosts, harness_split, point_costs
from sim.model.coverage import check_point, point_calibration
from sim.model.draws import Uniforms
from sim.model.engine import ModelEngine
from sim.model.gil import CPythonGil, NoGil, SimGil
from sim.model.loop import Loop
from sim.model.probe import ModelProbe
from sim.model.threads import Harness, ModelJob, ModelWorkers
from sim.point.addons import AddOn
from sim.point.arrivals import HAND_OVER_LEAD_S, drive_arrivals
from sim.point.record_sink import RecordSink, RowWriter, point_sink
from sim.point.records import RequestRecord, end_record
from sim.point.result import PointResult, point_result
from sim.store.clock import QUIET_SLACK_S
from sim.store.model import StoreModel, TransferOutcome
from sim.workload.plan import (
    PlannedRequest,
    Workload,
    plan_workload,
    request_bytes,
    tokens_range,
)

__all__ = ["Uniforms", "run_model_point"]  # Uniforms: sim.model.draws, kept importable here

ProgressFn = Callable[[int, int], None]


_NAN: Final = math.nan
_OK: Final = "ok"


def _ended(job: ModelJob) -> None:
    """A finished request's ``done``: it has been called already."""


class _Request(ModelJob):
    """One request's path after its arrival: CPU stages on a worker (it is its own
    :class:`ModelJob`: one object less per request), the store, the end. Built when the
    simulation thread hands it over (``now``): the arrivals' ``hand_over``
    (sim.point.arrivals.HandOver) with the point bound first.

    It keeps what its record would note in its own fields, and makes a
    :class:`RequestRecord` only when the sink needs one (a row kept, a failure): for the
    others the sink takes the request's cells alone (sim.point.record_sink), the same
    floats from the same expressions as the record's (a record per request, built and
    read back field by field, was a quarter of a day's instructions)."""

    __slots__ = (
        "arrival",
        "arrival_run",
        "chunks",
        "inject_lag",
        "injected_run",
        "nbytes",
        "p",
        "req",
        "then",
    )

    def __init__(
        self,
        p: _Point,
        req: PlannedRequest,
        arrival_s: float,
        then: Callable[[float], None] | None,
    ) -> None:
        p.arrived += 1
        self.p = p
        self.req = req
        self.arrival = arrival = p.origin + arrival_s  # loop time; the record has run time
        # Handed over ahead (sim.point.arrivals, lead_s): injected at its planned time, when
        # its load thread takes it up (ModelWorkers.submit_at); late: when handed over.
        now = p.loop.now
        injected = arrival if arrival > now else now
        self.then = then
        tokens = req.tokens
        size = p.sizes.get(tokens) or p.size(req)
        self.chunks = size[0]
        self.nbytes = size[1]
        self.arrival_run = arrival_s
        self.injected_run = injected - p.origin
        self.inject_lag = (injected - arrival) * 1e3 if injected > arrival else 0.0
        # ModelJob's fields, set here (no second constructor call per request)
        holds = p.holds
        hold = holds.get(req.request_id) if holds is not None else None
        self.hold_s = p.costs.hold_s(tokens) if hold is None else hold
        self.free_cpu_s = size[2]
        self.yields = size[3]
        self.free_sleep_s = p.free_sleep_s
        self.done = self._cpu_done
        self.start = self.end = self.free_wall = 0.0
        self.thread = ""
        p.workers.submit_at(self, injected)

    def _waited_ms(self) -> float:
        """The job's wall time outside its hold and GIL-free sections (ms): the GIL wait
        with the GIL on, the core wait without one (docs/columns.md §GIL off)."""
        return max(0.0, (self.end - self.start) - self.hold_s - self.free_wall) * 1e3

    def _cpu_done(self, job: ModelJob) -> None:
        # Break the cycle self.done -> bound method -> self: the point runs with the cyclic
        # collector paused, and a cycle per request would hold every request to the end.
        self.done = _ended
        p, req = self.p, self.req
        cpu_ms = (self.hold_s + self.free_cpu_s) * 1e3
        p.threads.add_times(cpu_ms, _NAN if p.gil_on else self._waited_ms())
        if req.draw < p.fail_prob:
            error = (
                f"SyntheticFailure: injected failure: draw {req.draw:.4f} < "
                f"fail_prob {p.fail_prob:g}"
            )
            # failed when the worker was done (real mode's time too)
            self._finish(self.end, None, error)
            if self.then is not None:
                self.then(self.end)
            return
        faults = np.random.default_rng([req.job_seed, 1]) if p.faulty else None
        p.store.transfer(self.nbytes, faults, self._transferred)

    def _transferred(self, xfer: TransferOutcome) -> None:
        p, c = self.p, self.p.costs
        done = p.loop.now  # the transfer's end as the store model fixed it
        self._finish(done, xfer, "")
        if self.then is None:  # nothing waits for the end: a quiet timer of real mode
            p.harness.defer(c.done_s, QUIET_SLACK_S + c.timer_late.draw())
        else:  # a closed loop's client is ready again once the thread has noted the end
            p.harness.post(c.done_s, c.timer_late.draw, self.then, done)

    def _finish(self, done: float, xfer: TransferOutcome | None, error: str) -> None:
        """The request ended at ``done`` (loop time), not when the simulation thread noted
        it. A transfer that ended ok gives the sink its cells (what end_record would make
        of its record: sim.point.records), unless the sink wants the record itself."""
        p = self.p
        rid = self.req.request_id
        done_s = done - p.origin
        latency_ms = (done - self.arrival) * 1e3
        sink = p.sink
        if (
            xfer is not None
            and xfer.error is None
            and xfer.transfer_ms is None
            and not sink.wants_record(rid)
        ):
            cpu_done_s = self.end - p.origin
            hold = wait = _NAN
            if p.gil_on:
                hold, wait = self.hold_s * 1e3, self._waited_ms()
            cells = (  # in the sink's order, sim.point.metrics.CELL_COLUMNS
                latency_ms,
                (done_s - cpu_done_s) * 1e3,  # modelled: from the end of the CPU stages
                hold,
                wait,
                (self.start - self.arrival) * 1e3,
                self.inject_lag,
                (self.end - self.start) * 1e3,
                # no hold stages, no collections (a literal: a starred tuple is built
                # through a list in compiled code)
                _NAN,
                _NAN,
                _NAN,
                _NAN,
                0.0,
                0.0,
                0.0,
                self.arrival_run,
                self.injected_run,
            )
            sink.add_cells(rid, cells, _OK, "")
        else:
            rec = self._record()
            end_record(rec, done_s, latency_ms, xfer, error)
            sink.add(rec)
        if p.on_done is not None:
            p.on_done(sink.finished)

    def _record(self) -> RequestRecord:
        """The request's record as its CPU stages left it (end_record finishes it)."""
        p, req = self.p, self.req
        rec = RequestRecord(
            request_id=req.request_id,
            tokens=req.tokens,
            chunks=self.chunks,
            bytes=self.nbytes,
            arrival_s=self.arrival_run,
            injected_s=self.injected_run,
            inject_lag_ms=self.inject_lag,
            trace_line=req.trace_line,
        )
        rec.thread = self.thread
        rec.start_s = self.start - p.origin
        rec.cpu_done_s = self.end - p.origin
        rec.queue_ms = (self.start - self.arrival) * 1e3
        rec.stage_wall_ms = (self.end - self.start) * 1e3
        rec.thread_cpu_ms = (self.hold_s + self.free_cpu_s) * 1e3
        if p.gil_on:  # as real mode's columns (docs/columns.md §GIL off): the core wait is
            rec.gil_hold_ms = self.hold_s * 1e3  # part of the GIL wait with the GIL on,
            rec.gil_wait_ms = self._waited_ms()
        else:  # and all the wait there is without one (no GIL hold or wait exists)
            rec.core_wait_ms = self._waited_ms()
        return rec


class _Point:
    """The simulated threads of one point, wired together on one loop."""

    def __init__(
        self,
        point: Point,
        costs: ModelCosts,
        cores: int,
        draw: Uniforms,
        sink: RecordSink,
        background: float = 0.0,
        holds: Mapping[int, float] | None = None,
        job_gap_s: float = 0.0,
        post_s: float = 0.0,
    ) -> None:
        cfg = point.config
        self.cfg = cfg
        self.costs = costs
        self.loop = loop = Loop()
        self.draw = draw
        self.cores = Cores(loop, cores, background, WAKE_BURST_S, costs.crowd)
        if cfg.simulated_gil == "none":
            self.gil: SimGil = NoGil(loop, self.cores)
        else:
            self.gil = CPythonGil(
                loop,
                self.cores,
                cfg.gil.switch_interval_ms / 1e3,
                self.draw.next,
                costs.gil_handoff.draw,
                costs.timer_late.draw,
                costs.gil_forced.draw,
                costs.gil_back.draw,
            )
        self.harness = Harness(loop, self.gil)
        self.workers = ModelWorkers(
            loop,
            self.gil,
            self.cores,
            self.harness,
            cfg.connector.workers,
            costs.wake.draw,
            costs.sleep_late.draw,
            costs.complete_s,
            costs.timer_late.draw,
            job_gap_s,
            post_s,
        )
        self.store = StoreModel(loop, cfg.store)
        self.sink = sink
        #: request_id -> measured GIL hold (s) to replay instead of the calibration's.
        self.holds = holds
        #: Requests handed over so far (the simulated-time watchdog's sign of progress).
        self.arrived = 0
        #: Loop time at which the load starts (run time zero): after the engine-alone
        #: baseline, which runs on the same loop first. Set by :meth:`drive`.
        self.origin = 0.0
        self.on_done: Callable[[int], None] | None = None
        #: tokens -> (chunks, bytes, GIL-free CPU s, yield points): a point has few
        #: distinct sizes.
        self.sizes: dict[int, tuple[int, int, float, tuple[float, ...]]] = {}
        self.free_sleep_s = costs.free_sleep_s
        self.faulty = cfg.store.fail_prob > 0 or cfg.store.stall_prob > 0
        #: Whether the simulated interpreter has a GIL; its thread columns as real mode's.
        self.gil_on = cfg.simulated_gil != "none"
        self.threads = ThreadTimes(self.gil_on)
        self.fail_prob = 0.0
        if cfg.connector.variant == "synthetic":
            self.fail_prob = float(cfg.connector.options.get("fail_prob", 0.0))

    def size(self, req: PlannedRequest) -> tuple[int, int, float, tuple[float, ...]]:
        """A request's chunks (all groups), bytes (sim.workload.plan.request_bytes),
        GIL-free CPU seconds and the points of its hold where a waiting thread gets in
        (ModelCosts.yield_points), remembered per token count (none of them draws)."""
        geo, tokens = self.cfg.model, req.tokens
        got = self.sizes[tokens] = (
            req.chunks(geo) * geo.kv_groups,
            request_bytes(geo, tokens),
            self.costs.free_s(tokens),
            self.costs.yield_points(tokens),
        )
        return got

    def drive(self, workload: Workload) -> None:
        """Start the arrivals now (run time zero): real mode's schedule
        (sim.point.arrivals), on the simulated simulation thread. Whatever ran on the
        loop before (the engine's baseline) shifts the schedule, never compresses it."""
        c = self.costs
        # A closed loop's client is posted without a timer's lateness (model semantics).
        late = c.timer_late.draw if workload.closed_clients is None else None
        # Ahead of their times where real mode's pipeline keeps them (a modelled store)
        lead_s = HAND_OVER_LEAD_S if self.cfg.store.kind == "model" else 0.0
        clock = _HarnessClock(self.loop, self.harness, c.arrival_s, late, lead_s)
        self.origin = self.loop.now
        # the hand-over is the request's constructor: no call of ours in between
        drive_arrivals(clock, self.origin, workload, partial(_Request, self))


class _HarnessClock:
    """Model mode's clock for arrivals (sim.point.arrivals.ArrivalClock): a call falls
    due on the loop, then is the simulated simulation thread's work (``cost_s``, woken
    ``late()`` late when asleep: sim.model.threads.Harness.post), and ``fn(arg)`` runs
    once that is done. A call already due is posted at once."""

    __slots__ = ("_cost_s", "_harness", "_late", "_loop", "_post_cb", "inline_due", "lead_s")

    def __init__(
        self,
        loop: Loop,
        harness: Harness,
        cost_s: float,
        late: Callable[[], float] | None,
        lead_s: float = 0.0,
    ) -> None:
        self.lead_s = lead_s
        self._loop = loop
        self._harness = harness
        self._cost_s = cost_s
        self._late = late
        self.inline_due = False  # each hand-over is the simulated thread's work
        #: The due call's callback, bound once (not a bound method object per request).
        self._post_cb: Callable[[tuple[Callable[[Any], None], Any]], None] = self._post

    @property
    def now(self) -> float:
        return self._loop.now

    def after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        self.at(self._loop.now + delay, fn, arg)

    def at(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        if t > self._loop.now:
            self._loop.at(t, self._post_cb, (fn, arg))
        else:
            self._post((fn, arg))

    def _post(self, call: tuple[Callable[[Any], None], Any]) -> None:
        self._harness.post(self._cost_s, self._late, call[0], call[1], own=True)


def run_model_point(
    point: Point,
    repeat: int = 0,
    progress: ProgressFn | None = None,
    calibration: Calibration | None = None,
    write_rows: RowWriter | None = None,
    measured: Measured | None = None,
    draw_stream: int = 0,
) -> PointResult:
    """Simulate one point × repeat; refuses (CalibrationError) what the calibration lacks.
    ``measured``: costs a real run measured, replayed instead of the calibration's
    (sim.model.replay). ``draw_stream``: 0, the model's own random choices (who gets
    the GIL, the wake-ups) continue the generator that planned the workload, as every
    model run's do; k > 0, an independent stream over the same plan, the k-th of a
    replay's draws (the same arrivals and tokens, other choices).

    The cyclic collector is paused for the point: the loop allocates a tuple per entry
    and little else that lives, so each collection would mostly re-scan the point's
    long lists and everything imported (~20 % of the time); the point's few cycles
    wait for the first collection after it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _simulate(point, repeat, progress, calibration, write_rows, measured, draw_stream)
    finally:
        if collecting:
            gc.enable()


def _simulate(
    point: Point,
    repeat: int,
    progress: ProgressFn | None,
    calibration: Calibration | None,
    write_rows: RowWriter | None,
    measured: Measured | None = None,
    draw_stream: int = 0,
) -> PointResult:
    cfg = point.config
    cal = calibration if calibration is not None else point_calibration(cfg)
    rng = np.random.default_rng([cfg.seed, repeat])
    workload = plan_workload(cfg, rng)
    # The guard: `run` and `validate` checked every point before (sim.model.coverage);
    # here the drawn plan itself, whatever called this.
    least, most = tokens_range(workload)
    check_point(cfg, cal, [least, most] if len(workload) else [])
    draw = Uniforms(
        rng if draw_stream == 0 else np.random.default_rng([cfg.seed, repeat, draw_stream])
    )
    costs = point_costs(cfg, cal, draw.next)
    if measured is not None:
        # A replayed request's thread CPU is what it took in the real run, beside the
        # load threads that ran with it: with no GIL it already holds the slowdown they
        # caused each other, which the calibration's crowd would add a second time.
        costs = replace(costs, crowd=())
        if measured.engine_build_s is not None:
            costs = replace(costs, engine_build_s=measured.engine_build_s)
        if measured.probe_hold_s is not None:
            costs = replace(costs, probe_hold_s=measured.probe_hold_s)
        if measured.harness_s is not None:
            # the run's own simulation thread, as each request's own hold (sim.model.replay)
            arrival, complete, done = harness_split(measured.harness_s, measured.steps_per_request)
            costs = replace(costs, arrival_s=arrival, complete_s=complete, done_s=done)
    cores = cfg.machine.cores or cal.cores
    background = cfg.machine.background_load
    if background is None:
        background = float(cal.harness.get("background_load", 0.0))
    sink = point_sink(cfg, len(workload), write_rows)
    holds = measured.holds_s if measured is not None else None
    gap = measured.job_gap_s if measured is not None else None
    post = measured.post_s if measured is not None else None
    # the job gap (one job's end to the next one's start) begins with the post
    gap = max(0.0, (gap or 0.0) - (post or 0.0))
    sim = _Point(point, costs, cores, draw, sink, background, holds, gap, post or 0.0)
    sim.harness.start()
    sim.workers.start()
    addons: list[AddOn[Loop]] = []
    if cfg.engine.enabled:
        addons.append(ModelEngine(cfg.engine, costs, sim.gil, sim.harness))
    if cfg.gil.probe:
        addons.append(
            ModelProbe(cfg.gil, costs, sim.gil, sim.draw, sim.harness, lambda: sink.hold_ms)
        )
    for addon in addons:
        addon.attach(sim.loop)
    loop = sim.loop
    total = len(workload)
    every = max(1, total // 20)

    def on_done(n: int) -> None:
        if progress is not None and (n % every == 0 or n == total):
            progress(n, total)
        if n == total:
            loop.stop()

    sim.on_done = on_done
    t0 = loop.now
    sim.drive(workload)
    # A watchdog in simulated time, as the sweep's on a started real run: a window of
    # limits.max_point_s plus one request timeout in which no request arrived or finished
    # fails the point. A point the machine cannot serve (background_load 100000: every
    # hold 50,000 times slower) would otherwise simulate every switch interval of hours;
    # a long plan (a day) that keeps making progress runs on.
    limit = cfg.limits.max_point_s + cfg.limits.request_timeout_s
    seen = -1
    while total and not loop.run(until=loop.now + limit):
        if loop.peek() == math.inf:
            raise RuntimeError(
                f"model stalled after {sink.finished} of {total} requests: nothing left to happen"
            )
        if sink.finished + sim.arrived == seen:
            raise RuntimeError(
                f"the model's point went {limit:g} s of simulated time (limits.max_point_s + "
                f"limits.request_timeout_s) with no request arriving or finishing, "
                f"{sink.finished} of {total} done: a real run would be stopped too; lighten "
                "the load (machine.background_load, workload rate, holds) or raise "
                "limits.max_point_s"
            )
        seen = sink.finished + sim.arrived
    elapsed = loop.now - t0
    for addon in addons:
        addon.detach()
    sink.close()
    # real mode's noise floor (sim.runtime.noise): from a planned timer's time to the
    # end of a no-op job (the simulation thread's hand-over, the worker's wake-up)
    floor = (costs.timer_late.median + costs.wake.median + costs.arrival_s) * 1e3
    noise = {columns.NOISE_FLOOR_P50_MS.name: floor, columns.NOISE_FLOOR_P99_MS.name: floor}
    figures = (noise, workload.stats, sim.threads.summary())
    result = point_result(point, repeat, sink, elapsed, figures, addons)
    result.summary["model_switches"] = sim.gil.switches
    result.summary["model_forced_drops"] = sim.gil.forced_drops
    result.summary["model_cores"] = cores
    result.summary["model_background_load"] = background
    return result
