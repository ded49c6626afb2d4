"""What a config would cost, estimated before any work, and refused past its budget.

Modelled time is wall time: a store latency of 10^8 ms really waits 28 hours,
and a grid of 8 axes × 12 values is 430 million points. ``validate`` and ``run``
therefore estimate, from the config alone, before a point is expanded or run:

* the grid's size (points × repeats), from the axes' lengths, before the points
  are materialised (``limits.max_points``; sim.config.grid, which the loader calls);
* the memory one point needs: its process (the interpreter and its imports,
  ``PROCESS_BYTES``), the address arrays of the requests in flight (chunks ×
  regions × groups × 16 bytes each) and the per-request records
  (``limits.max_memory_gib``; default half of this machine's memory). For a model
  point it is within 2× of the peak a point process measures at any request count
  (docs/design.md §6);
* the wall time a point's schedule implies at least (``limits.max_point_s``): the
  span of its planned arrivals (a trace's own clock, ``(last - first timestamp) /
  speedup``, from the replay plan: ``PlannedLoad``), then the last request's own
  transfer; the store time all its transfers need at the slowest configured
  bandwidth (the link, or ``concurrency`` transfers each capped at
  ``per_transfer_gb_per_s``); the engine's baseline steps.

Each refusal is one line that says what the estimate is made of and what to
change. The estimates are lower bounds: a point refused here could not have fit.
``kvsim validate`` prints the bound and, beside it, the expected wall time of a point
run: the bound plus the fixed cost of starting a point (``POINT_START_S``, measured
on the shipped configs: docs/results.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sim.errors import ConfigError
from sim.store.memory import memory_plan

__all__ = [
    "POINT_START_S",
    "Estimate",
    "PlannedLoad",
    "check_points",
    "estimate_point",
    "human_bytes",
    "human_seconds",
    "machine_memory_bytes",
]

#: Bytes of address arrays per chunk × region × group of a request in flight
#: (the address and the length, 8 bytes each).
BYTES_PER_ADDRESS = 16
#: Bytes kept per request (its record, its planned arrival, its row).
BYTES_PER_REQUEST = 1024
#: Requests a model-mode point holds at most (sim.workload.plan.PLAN_HELD).
MODEL_HELD = 1 << 16
#: A point process before its requests: the interpreter with numpy, the config models and
#: the point's modules imported (ru_maxrss of ``python -c "import sim.sweep.child,
#: sim.model.driver"``: 49 MiB on this machine, 3 Dec 2026; the real side's the same).
PROCESS_BYTES = 48 << 20
#: Seconds a real-mode point run costs besides its load: the child interpreter and its
#: imports, the variants' warm-up, the jobs built before the load, the noise floor before
#: and after (measured on this 2-core machine for quickstart and trace_replay, scalar and
#: numpy: 0.3-1.5 s; a numba variant's first compile adds 5-10 s, not counted here).
POINT_START_S = 1.0


class PlannedLoad(Protocol):
    """What the workload plan knows of a point before it runs (sim.workload.plan's
    ``WorkloadPreview``, or a stand-in that knows only the count).

    ``span_s`` is the last planned arrival in run time (a trace's span over its speed-up);
    None where the arrival process decides (the estimate then derives it from the rate).
    ``mean_tokens`` and ``max_tokens`` are the tokens the requests load, when planned.
    """

    @property
    def requests(self) -> int: ...
    @property
    def span_s(self) -> float | None: ...
    @property
    def mean_tokens(self) -> float | None: ...
    @property
    def max_tokens(self) -> int | None: ...


@dataclass(frozen=True)
class _Count:
    """A load known only by its request count."""

    requests: int
    span_s: float | None = None
    mean_tokens: float | None = None
    max_tokens: int | None = None


def human_seconds(s: float) -> str:
    if not math.isfinite(s):
        return "forever"
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


def human_bytes(n: float) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def machine_memory_bytes() -> int:
    """Physical memory of this machine (0 when it cannot be told)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def memory_budget(limits: Any) -> tuple[float, str]:
    """(bytes, how it was set) of the memory one point may need."""
    if limits.max_memory_gib is not None:
        return limits.max_memory_gib * (1 << 30), "limits.max_memory_gib"
    total = machine_memory_bytes()
    if total <= 0:
        return math.inf, "unknown machine memory"
    return total / 2, f"half of this machine's {human_bytes(total)}; limits.max_memory_gib"


def _mean_tokens(tokens: Any) -> float:
    dist = getattr(tokens, "dist", "fixed")
    if dist == "fixed":
        return float(tokens.value)
    if dist == "uniform":
        return (tokens.low + tokens.high) / 2
    if dist == "lognormal":
        return min(float(tokens.max), tokens.median * math.exp(tokens.sigma**2 / 2))
    return 1.0  # empirical: the trace decides; count one token at least


def _max_tokens(tokens: Any) -> int:
    dist = getattr(tokens, "dist", "fixed")
    if dist == "fixed":
        return int(tokens.value)
    if dist == "uniform":
        return int(tokens.high)
    return int(tokens.max)


@dataclass(frozen=True)
class Estimate:
    """Lower bounds for one point run."""

    requests: int
    memory_bytes: float
    memory_why: str
    wall_s: float
    wall_why: str
    #: Set when the store needs longer to move the requests' bytes than open-loop arrivals
    #: take to come, saying why: its queue grows through the run, and latency is mostly
    #: that queue's, whatever the variant.
    store_bound_why: str = ""

    @property
    def expected_s(self) -> float:
        """The wall time a real-mode point run is expected to take: the bound plus start-up."""
        return self.wall_s + POINT_START_S


def _arrival_span(
    cfg: Any, n: int, service_s: float, planned_span_s: float | None
) -> tuple[float, str]:
    arr = cfg.workload.arrival
    kind = getattr(arr, "kind", "")
    if kind == "trace" and planned_span_s is not None:
        return planned_span_s, (
            f"the trace's span of {human_seconds(planned_span_s * arr.speedup)} over "
            f"workload.arrival.speedup {arr.speedup:g}"
        )
    if kind in ("poisson", "constant"):
        return (n - 1) / arr.rate_rps, f"{n} requests at workload.arrival.rate_rps {arr.rate_rps:g}"
    if kind == "curve":
        per_cycle = sum(r * arr.step_s for r in arr.rate_rps)
        cycles, rest = divmod(max(n - 1, 0), per_cycle)
        span = cycles * arr.period_s
        for r in arr.rate_rps:  # the steps the rest of the requests need
            if rest <= r * arr.step_s:
                span += rest / r
                break
            rest -= r * arr.step_s
            span += arr.step_s
        return span, (
            f"{n} requests on the curve workload.arrival.rate_rps (mean {arr.mean_rps:.3g}/s) "
            f"in steps of workload.arrival.step_s {arr.step_s:g}"
        )
    if kind == "onoff":
        rate = arr.rate_rps * arr.on_ms / (arr.on_ms + arr.off_ms)
        return (n - 1) / rate, (
            f"{n} requests at {rate:.3g}/s (workload.arrival.rate_rps, on_ms, off_ms)"
        )
    if kind == "closed":
        rounds = math.ceil(n / arr.clients)
        each = arr.think_ms / 1e3 + service_s
        return rounds * each, (
            f"{rounds} rounds of {arr.clients} clients × (workload.arrival.think_ms "
            f"{arr.think_ms:g} + the store's time per request)"
        )
    return 0.0, ""


def estimate_point(cfg: Any, load: int | PlannedLoad) -> Estimate:
    """Lower bounds of the memory and the wall time of one run of the point ``cfg``
    (``load``: its planned requests, or just how many)."""
    if isinstance(load, int):
        load = _Count(load)
    requests = load.requests
    geo = cfg.model
    tokens = cfg.workload.tokens
    max_tokens = load.max_tokens if load.max_tokens is not None else _max_tokens(tokens)
    mean_tokens = load.mean_tokens if load.mean_tokens is not None else _mean_tokens(tokens)
    chunks = max(1, max_tokens // geo.block_size)
    in_flight = max(cfg.connector.workers, 1)
    per_request = chunks * geo.regions * geo.kv_groups * BYTES_PER_ADDRESS
    # Real mode keeps every request's state until the load ends; model mode streams its
    # records and draws long plans in blocks (docs/design.md §6): it holds at most
    # MODEL_HELD_REQUESTS requests' worth, whatever the count.
    held = requests if getattr(cfg, "mode", "real") != "model" else min(requests, MODEL_HELD)
    memory = PROCESS_BYTES + in_flight * per_request + held * BYTES_PER_REQUEST
    memory_why = (
        f"its process {human_bytes(PROCESS_BYTES)} + {held} request(s) held × "
        f"{human_bytes(BYTES_PER_REQUEST)} + {in_flight} request(s) in flight × {chunks} "
        f"chunks × {geo.regions} regions × {geo.kv_groups} group(s) × {BYTES_PER_ADDRESS} B"
    )
    store = cfg.store
    if store.kind == "mooncake":  # real RAM: KV buffers and store segment (sim.store.memory)
        plan = memory_plan(cfg)
        memory += plan.total_bytes
        memory_why += f" + real store: {plan.breakdown()}"
    mean_chunks = max(1.0, mean_tokens // geo.block_size)
    nbytes = mean_chunks * geo.bytes_per_block * geo.kv_groups
    link = store.bandwidth_gb_per_s * 1e9
    one = min(link, store.per_transfer_gb_per_s * 1e9) if store.per_transfer_gb_per_s else link
    # The slowest configured bandwidth: the link, or every slot's capped transfer together.
    slowest = min(link, store.concurrency * one)
    fixed_s = (
        store.latency_ms / 1e3
        + store.stall_prob * store.stall_ms / 1e3
        + store.fail_prob * store.retry_backoff_ms / 1e3
    )
    service_s = fixed_s + nbytes / one
    # The link is shared: all the bytes cross it one after another, whatever the concurrency,
    # and no faster than the slots' capped transfers together; the fixed costs overlap up to
    # store.concurrency at a time.
    store_s = max(requests * nbytes / slowest, requests * fixed_s / store.concurrency)
    span_s, span_why = _arrival_span(cfg, requests, service_s, load.span_s)
    # The last request arrives at the span's end and takes at least its own transfer.
    span_s += service_s
    span_why += f", then the last request's transfer ({human_seconds(service_s)})"
    engine_s = 0.0
    if cfg.engine.enabled:
        engine_s = cfg.engine.baseline_steps * (cfg.engine.forward_ms + cfg.engine.idle_ms) / 1e3
    if store_s >= span_s:
        cap = (
            f" (store.per_transfer_gb_per_s {store.per_transfer_gb_per_s:g} × "
            f"store.concurrency {store.concurrency})"
            if slowest < link
            else ""
        )
        wall_why = (
            f"{requests} transfers of {human_bytes(nbytes)} at {slowest / 1e9:.3g} GB/s, the "
            f"slowest configured bandwidth (store.bandwidth_gb_per_s "
            f"{store.bandwidth_gb_per_s:g}){cap}, each with "
            f"{fixed_s * 1e3:.3g} ms of store.latency_ms, stalls and retries, "
            f"store.concurrency {store.concurrency} at a time"
        )
    else:
        wall_why = span_why
    bound = store_s > span_s and getattr(cfg.workload.arrival, "kind", "") != "closed"
    bound_why = wall_why if bound else ""
    if engine_s > max(store_s, span_s):
        wall_why = "engine.baseline_steps × (engine.forward_ms + engine.idle_ms)"
    wall = max(store_s, span_s) + engine_s
    return Estimate(requests, memory, memory_why, wall, wall_why, store_bound_why=bound_why)


def check_points(
    where: str, points: Sequence[Any], counts: Sequence[int | PlannedLoad]
) -> list[Estimate]:
    """Estimate every point; ConfigError for the first one past a budget."""
    out = []
    for p, n in zip(points, counts, strict=True):
        cfg = p.config
        est = estimate_point(cfg, n)
        budget, how = memory_budget(cfg.limits)
        label = f"point {p.index} ({p.label})"
        if est.memory_bytes > budget:
            raise ConfigError(
                f"{where}: {label} needs at least {human_bytes(est.memory_bytes)} of memory "
                f"({est.memory_why}), past the budget of {human_bytes(budget)} ({how}); "
                "lower workload.tokens, model.regions or connector.workers"
            )
        real_time = getattr(cfg, "mode", "real") != "model"
        if real_time and est.wall_s > cfg.limits.max_point_s:
            raise ConfigError(
                f"{where}: {label} would take at least {human_seconds(est.wall_s)} of wall "
                f"time (modelled time is wall time: {est.wall_why}), past "
                f"limits.max_point_s ({cfg.limits.max_point_s:g} s); change those fields or "
                "raise limits.max_point_s"
            )
        out.append(est)
    return out
