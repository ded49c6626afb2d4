"""Trace replay planning: which trace requests load how many tokens, and when they arrive.

Requests are replayed in trace order against a :class:`PrefixCache` sized from
the config, so each request's load is exactly the prefix the store holds when
it arrives. A request's tokens to load are its stored leading blocks, at most
``input_length - 1`` (the engine always computes the last prompt token, as vLLM
caps an external hit), rounded down to the geometry's chunk granularity.

With ``load: prompt`` a request loads its whole prompt but the last token instead,
whatever the store holds (an upper bound); ``hit_ratio`` is still the store's (what
``load: hit`` would load over the prompt tokens).

``cache.warm: {requests: N}`` replays the first N lines into the store first,
untimed: they load nothing and leave no row, and the measured window (``limit``
lines) starts at line N + 1 from a warm store, as a production store is.
``cache.warm: {share: f}`` warms with the first ``floor(f × lines)`` lines of the
whole trace instead, so one config warms a short trace and a long one alike.

Requests left with nothing to load issue no load in a real connector, so they
are not run; they are counted (``skipped_requests``) and their prompt tokens
stay in the denominator of ``hit_ratio``. Arrival times keep the trace's clock:
request i arrives at ``(timestamp_i - timestamp_w) / speedup`` seconds, ``w`` the first
measured line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.columns import PLANNED, names
from sim.config.geometry import GeometryConfig
from sim.config.workload import PrefixCacheConfig, TraceArrival
from sim.workload.prefix_cache import PrefixCache
from sim.workload.trace import Trace, TraceError, read_trace

__all__ = [
    "ReplayPlan",
    "cache_capacity_blocks",
    "plan_replay",
    "replay_trace",
    "trace_block_bytes",
]


@dataclass(frozen=True, eq=False)
class ReplayPlan:
    """The replayed requests that load something, in arrival order."""

    trace_index: np.ndarray
    #: 1-based line in the trace file of each replayed request (requests.csv ``trace_line``).
    trace_line: np.ndarray
    tokens: np.ndarray
    arrival_s: np.ndarray
    stats: dict[str, float]
    #: Trace lines replayed into the store before the window (``cache.warm``).
    warm_lines: int = 0


def trace_block_bytes(geometry: GeometryConfig, block_tokens: int) -> float:
    """Bytes one trace block takes in the store: all regions and groups of one rank."""
    per_token = geometry.bytes_per_block * geometry.kv_groups / geometry.block_size
    return per_token * block_tokens


def cache_capacity_blocks(
    cache: PrefixCacheConfig, geometry: GeometryConfig, block_tokens: int
) -> int | None:
    """The store's capacity in trace blocks (None: unbounded)."""
    if cache.capacity_blocks is not None:
        return cache.capacity_blocks
    if cache.capacity_gib is None:
        return None
    block_bytes = trace_block_bytes(geometry, block_tokens)
    blocks = math.floor(cache.capacity_gib * 2**30 / block_bytes)
    if blocks < 1:
        raise TraceError(
            f"workload.arrival.cache.capacity_gib: {cache.capacity_gib} GiB holds no whole "
            f"trace block ({block_bytes:.0f} bytes for {block_tokens} tokens of this model)"
        )
    return blocks


def plan_replay(trace: Trace, arrival: TraceArrival, geometry: GeometryConfig) -> ReplayPlan:
    """Replay ``trace`` through a fresh store memory; deterministic, draws nothing."""
    cache = PrefixCache(
        cache_capacity_blocks(arrival.cache, geometry, arrival.block_tokens),
        arrival.cache.policy,
    )
    gran = geometry.chunk_granularity
    offsets, ids = trace.offsets.tolist(), trace.hash_ids.tolist()
    warm_cfg = arrival.cache.warm
    warm = warm_cfg.lines(len(trace))
    for i in range(warm):  # untimed: only what the store holds afterwards matters
        cache.store(ids[offsets[i] : offsets[i + 1]])
    if warm == len(trace):
        which = "cache.warm.requests" if warm_cfg.share is None else "cache.warm.share"
        raise TraceError(
            f"{trace.path}: all {warm} lines read warm the store ({which}) and "
            "none is left to measure; the trace has no more lines"
        )
    n = len(trace) - warm if arrival.limit is None else min(len(trace) - warm, arrival.limit)
    end = warm + n
    inputs = trace.input_length[warm:end]
    loads = np.zeros(n, dtype=np.int64)
    hit_blocks = hit_tokens = 0
    prompt = arrival.load == "prompt"
    inputs_list = inputs.tolist()
    for k in range(n):
        i = warm + k
        hit = cache.access(ids[offsets[i] : offsets[i + 1]])
        hit_blocks += hit
        cap = inputs_list[k] - 1
        stored = min(hit * arrival.block_tokens, cap) // gran * gran
        hit_tokens += stored
        loads[k] = cap // gran * gran if prompt else stored
    chosen = np.flatnonzero(loads)
    if chosen.size == 0:
        raise TraceError(
            f"{trace.path}: none of the {n} replayed requests finds a stored prefix of at "
            f"least one chunk ({gran} tokens); replay more requests, warm the store "
            "(cache.warm) or enlarge it"
        )
    stamps = trace.timestamps_ms[warm:end]
    t = (stamps - stamps[0]) / 1e3 / arrival.speedup
    measured_blocks = offsets[end] - offsets[warm]
    values = (
        float(n),
        float(n - chosen.size),
        float(hit_tokens / inputs.sum()),
        float(hit_blocks / max(measured_blocks, 1)),
    )
    stats = dict(zip(names(PLANNED), values, strict=True))
    lines = trace.lines if trace.lines is not None else np.arange(1, len(trace) + 1, dtype=np.int64)
    lines = lines[warm:end]
    return ReplayPlan(chosen + warm, lines[chosen], loads[chosen], t[chosen], stats, warm)


def replay_trace(arrival: TraceArrival, geometry: GeometryConfig) -> ReplayPlan:
    """Read the lines the replay needs and plan it: ``cache.warm.requests`` + ``limit``,
    or the whole trace when the warm-up is a share of it (or there is no limit)."""
    limit, warm = arrival.limit, arrival.cache.warm
    lines = None if limit is None or warm.share is not None else limit + (warm.requests or 0)
    return plan_replay(read_trace(arrival.path, lines), arrival, geometry)
