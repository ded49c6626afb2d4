"""What each simulated thread spends, for one point: its config read through its calibration.

Costs are in seconds. A load request holds the GIL for ``hold_s(tokens)`` of CPU,
then spends ``free_cpu_s`` in GIL-free CPU work (a nogil kernel) and
``free_sleep_s`` in a GIL-free wait (no CPU). The simulation thread (the
harness) holds the GIL for a small CPU cost at each of a request's three
wake-ups: the arrival, the worker's completion, the transfer's end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from connectors import registry
from sim.config import ExperimentConfig
from sim.model.calibration import PARAMETRIC, Calibration, LinearFit

__all__ = [
    "HARNESS_SHARES",
    "Latency",
    "Measured",
    "ModelCosts",
    "Spread",
    "evenly",
    "harness_split",
    "point_costs",
]


def _sampler(values: list[float], draw: Callable[[], float]) -> Callable[[], float]:
    """``values[int(draw() * n)]`` per call (no draw when there is one value), built from
    C-level iterators so that a call runs no Python frame (model mode draws several per
    request): the same draws, taken at the same moments, as the plain expression."""
    if len(values) == 1:
        return repeat(values[0]).__next__
    index = map(int, map(float(len(values)).__mul__, iter(draw, None)))
    return map(values.__getitem__, index).__next__


class Latency:
    """A latency measured on the machine, as samples; each call draws one (seconds).
    ``draw()`` is the same, faster (no Python frame)."""

    __slots__ = ("_n", "_samples", "draw", "median")

    def __init__(self, samples_ms: list[float], draw: Callable[[], float]) -> None:
        self._samples = [max(0.0, x) / 1e3 for x in samples_ms] or [0.0]
        self._n = len(self._samples)
        self.draw = _sampler(self._samples, draw)
        self.median = float(np.median(self._samples))

    def __call__(self) -> float:
        return self.draw()

    def many(self, uniforms: np.ndarray) -> np.ndarray:
        """One draw per uniform in ``uniforms`` (the same mapping as a call, vectorised)."""
        samples = np.asarray(self._samples)
        if self._n == 1:
            return np.full(len(uniforms), samples[0])
        return samples[np.minimum((uniforms * self._n).astype(np.int64), self._n - 1)]


class Spread:
    """How one request's hold varies around the mean (measured ratios); each call draws one.

    The same requests do not cost the same: a collection now and then, cache misses. A
    constant hold would leave the model's queues without the variance that, near
    saturation, decides their waits."""

    __slots__ = ("_ratios", "draw")

    def __init__(self, ratios: list[float], draw: Callable[[], float]) -> None:
        self._ratios = [max(0.0, r) for r in ratios] or [1.0]
        self.draw = _sampler(self._ratios, draw)

    def __call__(self) -> float:
        return self.draw()


@dataclass(frozen=True)
class Measured:
    """Costs a real run measured, replayed instead of the calibration's (sim.model.replay):
    with the machine's speed of that minute taken out, what is left to compare is the
    mechanism (queue, GIL, cores, store)."""

    #: request_id -> seconds of GIL hold that request took in the real run.
    holds_s: Mapping[int, float]
    #: The engine step's build hold the real run measured (None: the calibration's).
    engine_build_s: float | None = None
    #: A load thread's GIL-held CPU between two jobs, outside either's measured hold (the
    #: answer's post, the queue's get, the meter's set-up): the median gap from one job's
    #: end to the same thread's next start when that job was already queued (None: none).
    job_gap_s: float | None = None
    #: The simulation thread's GIL time per request the real run measured (its summary's
    #: ``harness_us_per_request``, in seconds; None: the calibration's). It is a run's
    #: own, not the calibration's: it spent 36-52 µs a request at 800 req/s (more
    #: requests per wake-up) and 140-260 at 15 req/s (issue 40, the 13:36 runs).
    harness_s: float | None = None
    #: A load thread's GIL-held CPU from a job's measured end to its answer's post, where
    #: the transfer starts (real mode's measure() tear-down and the outcome): the median
    #: of a transfer's time beyond its time alone on the link, over transfers that ran
    #: alone (None: none did, or the store is not modelled).
    post_s: float | None = None
    #: The probe's GIL time per wake-up that found the GIL busy, as the real run measured
    #: it (``probe_hold_busy_us``, in seconds; None: the calibration's).
    probe_hold_s: float | None = None
    #: Engine steps per request under the load (steps.csv's ``load`` rows over the
    #: requests): ``harness_s`` holds the simulation thread's CPU for them too.
    steps_per_request: float = 0.0


#: The simulation thread's CPU per request over its items: a request's arrival, its
#: completion, its transfer's end (ModelCosts' ``arrival_s``, ``complete_s``, ``done_s``).
HARNESS_SHARES = (0.4, 0.3, 0.3)


def harness_split(
    per_request_s: float, steps_per_request: float = 0.0
) -> tuple[float, float, float]:
    """The simulation thread's CPU per request over its three items (:data:`HARNESS_SHARES`):
    the one split the calibration's figure and a replayed run's go through.

    ``steps_per_request``: engine steps whose event the thread also served within
    ``per_request_s`` (a real run's figure is all its CPU over the load, by requests).
    The model posts each step as an item costing what a completion costs
    (sim.model.engine), so the figure is spread over both and the items add up to it
    again. Charged per request only, a replay spent the steps' share twice: its
    simulation thread held the GIL 11-19 % of the time at engine_interference's one-thread
    points, the real one 2-3 % (issue 40)."""
    arrival, complete, done = HARNESS_SHARES
    unit = per_request_s / (1.0 + complete * steps_per_request)
    return unit * arrival, unit * complete, unit * done


@dataclass(frozen=True)
class ModelCosts:
    #: Load request: hold fit (None for a parametric variant) and the fixed parts.
    hold_fit: LinearFit | None
    free_fit: LinearFit | None
    fixed_hold_s: float
    free_cpu_s: float
    free_sleep_s: float
    regions: int
    groups: int
    block_size: int
    #: Simulation thread: CPU per wake-up (arrival, completion, transfer end).
    arrival_s: float
    complete_s: float
    done_s: float
    #: OS wake-up of a blocked thread (queue, inbox), and lateness of a timed wait / sleep:
    #: each call draws one measured sample (seconds).
    wake: Latency
    #: The GIL's own hand-offs (kvsim calibrate; a queue's wake-up where not measured):
    #: a holder's release to the woken waiter's first bytecode, a forced one (the drop
    #: request honoured) and FORCE_SWITCHING's return to the thread forced off.
    gil_handoff: Latency
    gil_forced: Latency
    gil_back: Latency
    timer_late: Latency
    sleep_late: Latency
    #: Probe: lateness on an idle GIL (drawn), and its GIL hold per wake-up that found
    #: the GIL busy: the only wake-ups at which the model's probe takes the GIL
    #: (sim.model.probe), and two to three times as long as one on a free GIL.
    probe_late: Latency
    probe_hold_s: float
    #: Engine step build hold (None: no engine, or not calibrated).
    engine_build_s: float | None
    #: The calibration's measurements of this variant: chunks, regions, groups, hold, free.
    points: tuple[dict[str, float], ...] = ()
    #: A request's hold over the mean, drawn per request (None: every request the mean).
    hold_spread: Spread | None = None
    #: The calibration's measured costs times this (machine.cpu_scale: a host's speed);
    #: the fixed costs above are already scaled where measured, the fitted ones here.
    cpu_scale: float = 1.0
    #: With no GIL, ``crowd[m]``: how much more CPU a load thread's request takes with
    #: ``m`` load threads running Python at once (the calibration's parallel slowdown,
    #: sim.calibration.measure_parallel; 1.0 at 0 and 1). Empty: never slower.
    crowd: tuple[float, ...] = ()
    #: The calibration's rows of mid-hold GIL releases a waiting thread took
    #: (sim.calibration.measure_yields); empty: none (gil.own_releases off, a GIL-free
    #: interpreter, a parametric variant, a calibration from before they were measured).
    yields: tuple[dict[str, Any], ...] = ()
    #: Where in the engine step's build (fractions) a waiting thread takes the GIL at
    #: torch's own releases (the calibration's count at the default batch, every size).
    engine_yields: tuple[float, ...] = ()
    #: chunks -> yield_points, filled as requests ask.
    _yield_memo: dict[int, tuple[float, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: (key, chunks) -> ms, filled as requests ask (a point has few distinct sizes).
    _memo: dict[tuple[str, int], float] = field(default_factory=dict, compare=False, repr=False)

    def hold_s(self, tokens: int) -> float:
        if self.hold_fit is None:
            return self.fixed_hold_s
        mean = self._cost_s("hold", tokens)
        return mean if self.hold_spread is None else mean * self.hold_spread.draw()

    def yield_points(self, tokens: int) -> tuple[float, ...]:
        """Where in a request's hold (fractions) a waiting thread takes the GIL at a
        release of the variant's own: the calibration's count at this many chunks
        (interpolated at the nearest measured region count; scaled down to none below
        the smallest size measured, up in proportion above the largest), evenly spaced
        over the span it measured them in."""
        if not self.yields:
            return ()
        chunks = -(-tokens // self.block_size) * self.groups
        got = self._yield_memo.get(chunks)
        if got is None:
            got = self._yield_memo[chunks] = _yield_points(self.yields, self.regions, chunks)
        return got

    def free_s(self, tokens: int) -> float:
        """GIL-free CPU time of a request (a nogil kernel)."""
        if self.free_fit is None:
            return self.free_cpu_s
        return self._cost_s("free", tokens)

    def _cost_s(self, key: str, tokens: int) -> float:
        chunks = -(-tokens // self.block_size) * self.groups
        ms = self._memo.get((key, chunks))
        if ms is None:
            ms = self._memo[(key, chunks)] = _cost_ms(self, key, chunks) * self.cpu_scale
        return ms / 1e3


def _cost_ms(costs: ModelCosts, key: str, chunks: int) -> float:
    """Measured cost at ``chunks`` (all groups): interpolated between the calibration's
    measurements at this point's regions and groups when it has them (the fit's
    straight line misses the curvature of big requests: allocation and GC), else the fit."""
    same = sorted(
        (p["chunks"], p[key])
        for p in costs.points
        if p["regions"] == costs.regions and p["groups"] == costs.groups
    )
    if len(same) >= 2 and same[0][0] <= chunks <= same[-1][0]:
        xs, ys = zip(*same, strict=True)
        return float(np.interp(chunks, xs, ys))
    fit = costs.hold_fit if key == "hold" else costs.free_fit
    assert fit is not None
    return fit.ms(chunks, costs.regions, costs.groups)


def _yield_points(rows: tuple[dict[str, Any], ...], regions: int, chunks: int) -> tuple[float, ...]:
    """ModelCosts.yield_points, computed."""
    near = min(abs(r["regions"] - regions) for r in rows)
    same = sorted(
        (r["chunks"], r["per_request"], r["span"])
        for r in rows
        if abs(r["regions"] - regions) == near
    )
    xs = [float(c) for c, _n, _s in same]
    ns = [float(n) for _c, n, _s in same]
    if chunks <= xs[0]:
        count = ns[0] * chunks / xs[0]
    elif chunks >= xs[-1]:
        count = ns[-1] * chunks / xs[-1]
    else:
        count = float(np.interp(chunks, xs, ns))
    return evenly(count, min(same, key=lambda r: abs(r[0] - chunks))[2])


def evenly(count: float, span: tuple[float, float] | list[float]) -> tuple[float, ...]:
    """``round(count)`` points evenly spaced over ``span`` (fractions of a hold)."""
    k = round(count)
    lo, hi = span
    return tuple(lo + (hi - lo) * (i + 0.5) / k for i in range(k)) if k > 0 else ()


def point_costs(
    cfg: ExperimentConfig, cal: Calibration, draw: Callable[[], float] = lambda: 0.5
) -> ModelCosts:
    """Costs of one point; the caller has checked that the calibration covers it.
    ``draw`` gives the uniform draws latencies are sampled with (the run's generator)."""
    h = cal.harness
    conn = cfg.connector
    entry = cal.variant(conn.variant, conn.handler) or {}
    hold_fit = free_fit = None
    fixed_hold = free_cpu = free_sleep = 0.0
    if conn.variant in PARAMETRIC:
        opts = registry.get_address_variant(conn.variant).validate_options(conn.options)
        # its hold and GIL-free CPU are what the config asks for (CPU time, whatever the
        # host's speed); only the measured overhead runs faster or slower
        scaled = float(entry.get("overhead_ms", 0.0)) * cfg.machine.cpu_scale
        fixed_hold = (opts.hold_ms + scaled) / 1e3
        free_ms = opts.free_ms
        if opts.free_kind == "kernel":
            free_cpu = free_ms / 1e3
        elif free_ms > 0:
            free_sleep = free_ms / 1e3  # the worker adds the sleep's lateness
    else:
        hold_fit = LinearFit.from_dict(entry["hold"])
        free_fit = LinearFit.from_dict(entry["free"])
    # a hold's own GIL releases, where asked for (gil.own_releases) and there is a GIL
    releases = cfg.gil.own_releases and cfg.simulated_gil != "none"
    engine_build = None
    engine_yields: tuple[float, ...] = ()
    if cfg.engine.enabled:
        ms = cal.engine_build_ms(cfg.engine.index_variant, cfg.engine.max_tokens())
        engine_build = None if ms is None else ms / 1e3
        found = cal.engine_yields(cfg.engine.index_variant)
        if found and releases:
            engine_yields = evenly(found["per_request"], found["span"])
    scale = cfg.machine.cpu_scale
    if engine_build is not None:
        engine_build *= scale
    arrival, complete, done = harness_split(h["sim_cpu_per_request_ms"] / 1e3 * scale)
    return ModelCosts(
        hold_fit=hold_fit,
        free_fit=free_fit,
        fixed_hold_s=fixed_hold,
        free_cpu_s=free_cpu,
        free_sleep_s=free_sleep,
        regions=cfg.model.regions,
        groups=cfg.model.kv_groups,
        block_size=cfg.model.block_size,
        arrival_s=arrival,
        complete_s=complete,
        done_s=done,
        wake=Latency(cal.samples_ms("wake"), draw),
        gil_handoff=Latency(cal.samples_ms("gil_handoff", fallback="wake"), draw),
        gil_forced=Latency(cal.samples_ms("gil_forced", fallback="wake"), draw),
        gil_back=Latency(cal.samples_ms("gil_back", fallback="wake"), draw),
        timer_late=Latency(cal.samples_ms("timer_late"), draw),
        sleep_late=Latency(cal.samples_ms("sleep_late"), draw),
        probe_late=Latency(cal.samples_ms("probe_late"), draw),
        # a calibration before 8 Dec 2026 has the hold on a free GIL only
        probe_hold_s=h.get("probe_hold_busy_ms", h["probe_hold_ms"]) / 1e3 * scale,
        engine_build_s=engine_build,
        points=tuple(entry.get("points", ())),
        hold_spread=Spread(entry["hold_spread"], draw) if entry.get("hold_spread") else None,
        cpu_scale=scale,
        crowd=_crowd(entry) if cfg.simulated_gil == "none" else (),
        yields=tuple(entry.get("yields", ())) if releases else (),
        engine_yields=engine_yields,
    )


def _crowd(entry: dict[str, Any]) -> tuple[float, ...]:
    """The variant's measured parallel slowdown by threads at once (ModelCosts.crowd);
    empty where the calibration has none (measured under a GIL, or before it was)."""
    found = entry.get("parallel_slowdown") or {}
    crowd = [1.0, 1.0]
    for m in range(2, 2 + len(found)):
        at = found.get(str(m))
        if at is None:
            break
        crowd.append(max(1.0, float(at["slowdown"])))
    return tuple(crowd) if len(crowd) > 2 else ()
