"""The planned workload: every request's tokens, arrival time and job, from one seed.

Everything random is drawn up front from the run's one generator, in request
order, so the same config and seed give the same workload byte for byte however
the threads interleave. A request's bulky job data (block hashes and block ids)
is rebuilt on demand from a 64-bit seed planned with it, so that a long run does
not hold every request's block table in memory.

A plan of more than ``PLAN_HELD`` requests (not a trace, whose lines are read
whole anyway) is not held either: it takes one seed from the run's generator and
draws its requests a block at a time whenever it is iterated (the same requests
each time), so that a model-mode point of ten million requests plans in bounded
memory (docs/design.md §6). Up to ``PLAN_HELD`` requests the plan is drawn at once,
exactly as before.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import numpy as np

from connectors.base import LoadJob
from sim.columns import PLANNED, names
from sim.config.experiment import ExperimentConfig
from sim.config.geometry import GeometryConfig
from sim.config.workload import (
    ClosedLoopArrival,
    EmpiricalTokens,
    FixedTokens,
    LognormalTokens,
    TraceArrival,
    UniformTokens,
)
from sim.workload.arrivals import open_loop_block, open_loop_times
from sim.workload.replay import replay_trace
from sim.workload.trace import read_trace

__all__ = [
    "PLAN_BLOCK",
    "PLAN_HELD",
    "PlannedRequest",
    "Workload",
    "WorkloadPreview",
    "plan_workload",
    "planned_requests",
    "preview_workload",
    "request_bytes",
    "tokens_range",
]

HASH_LEN = 32
#: Requests a plan holds at most; a longer one is drawn PLAN_BLOCK at a time.
PLAN_HELD = 1 << 16
PLAN_BLOCK = 1 << 13


class PlannedRequest(NamedTuple):
    """One planned request: immutable, compared and hashed by its fields.

    A named tuple rather than a frozen dataclass: a long plan makes one per request,
    and a frozen dataclass's ``__init__`` (a Python-level ``object.__setattr__`` per
    field) was ~8 % of a model point's instructions; :class:`_BlockPlan` builds these
    from a block's columns without a Python call each."""

    request_id: int
    tokens: int
    #: Planned arrival, run time in seconds (open loop, trace); None where clients decide
    #: (closed loop: a client's request is due when its previous one completed + think time).
    at_s: float | None
    job_seed: int
    draw: float
    #: 1-based line of the trace file this request replays; None when not replaying a trace.
    trace_line: int | None = None

    def chunks(self, geometry: GeometryConfig) -> int:
        return -(-self.tokens // geometry.block_size)

    def job_nbytes(self, geometry: GeometryConfig) -> int:
        """About the memory its job takes: the hashes, and an int and a list slot per block id."""
        return (
            self.tokens // geometry.chunk_granularity * HASH_LEN
            + self.chunks(geometry) * geometry.kv_groups * 36
        )

    def job(self, geometry: GeometryConfig, gen: np.random.Generator | None = None) -> LoadJob:
        """The request's CPU-stage input, rebuilt identically from its seed.

        Built on the simulation thread for every request, so it is part of the
        harness's cost: raw 64-bit words from a PCG64 whose state is set straight from
        the seed (no SeedSequence hashing, no ``Generator.bytes``), on ``gen`` when
        given (one per pipeline, reused) — the same words whichever generator is used.
        """
        n_words = self.tokens // geometry.chunk_granularity * (HASH_LEN // 8)
        n_chunks = self.chunks(geometry)
        # One draw for all of it: the same words, in the same order, as a draw per part.
        words = _seeded(self.job_seed, gen).bit_generator.random_raw(
            n_words + n_chunks * geometry.kv_groups
        )
        hashes = words[:n_words].tobytes()
        ids = (words[n_words:] % np.uint64(geometry.num_blocks)).tolist()
        block_ids = tuple(ids[g * n_chunks : (g + 1) * n_chunks] for g in range(geometry.kv_groups))
        return LoadJob(self.request_id, self.tokens, hashes, block_ids, HASH_LEN, self.draw)


_MASK128 = (1 << 128) - 1
_MIX = 0x9E3779B97F4A7C15F39CC0605CEDC835  # odd: distinct seeds give distinct states


def _seeded(seed: int, gen: np.random.Generator | None = None) -> np.random.Generator:
    """``gen`` (or a new generator) put in the state that ``seed`` fixes."""
    if gen is None:
        gen = np.random.Generator(np.random.PCG64(0))
    gen.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": (seed * _MIX) & _MASK128, "inc": ((seed << 1) | 1) & _MASK128},
        "has_uint32": 0,
        "uinteger": 0,
    }
    return gen


@dataclass(frozen=True)
class Workload:
    requests: Sequence[PlannedRequest]
    closed_clients: int | None
    think_s: float
    #: Summary columns known from the plan alone (sim.columns.PLANNED; NaN when not a trace).
    stats: Mapping[str, float] = field(
        default_factory=lambda: dict.fromkeys(names(PLANNED), float("nan"))
    )

    def __iter__(self) -> Iterator[PlannedRequest]:
        return iter(self.requests)

    def __len__(self) -> int:
        return len(self.requests)


def request_bytes(geometry: GeometryConfig, tokens: int) -> int:
    """Bytes a request moves: every started block of every region and group.

    A request of ``tokens`` tokens spans ``ceil(tokens / block_size)`` blocks, each
    of which moves ``bytes_per_block`` per group (a partial last block moves whole).
    """
    blocks = -(-tokens // geometry.block_size)
    return blocks * geometry.bytes_per_block * geometry.kv_groups


def _draw_tokens(
    cfg: ExperimentConfig,
    rng: np.random.Generator,
    n: int,
    lengths: np.ndarray | None = None,
) -> np.ndarray:
    """``n`` token counts (``lengths``: an empirical spec's trace lengths, read already)."""
    spec = cfg.workload.tokens
    if isinstance(spec, FixedTokens):
        raw = np.full(n, spec.value, dtype=np.int64)
    elif isinstance(spec, UniformTokens):
        raw = rng.integers(spec.low, spec.high, endpoint=True, size=n)
    elif isinstance(spec, LognormalTokens):
        raw = np.minimum(np.exp(rng.normal(np.log(spec.median), spec.sigma, size=n)), spec.max)
        raw = raw.astype(np.int64)
    elif isinstance(spec, EmpiricalTokens):
        if lengths is None:
            lengths = read_trace(spec.path).input_length
        raw = np.minimum(lengths[rng.integers(0, len(lengths), size=n)], spec.max)
    else:  # pragma: no cover - the config union is closed
        raise TypeError(f"unknown tokens spec {spec!r}")
    gran = cfg.model.chunk_granularity
    return np.maximum(raw // gran, 1) * gran


def plan_workload(cfg: ExperimentConfig, rng: np.random.Generator) -> Workload:
    """Every request of a point. Draws happen in a fixed order — tokens, arrivals, job seeds,
    failure draws — each for all requests at once, so a plan depends on config and seed only.
    """
    arrival = cfg.workload.arrival
    stats: dict[str, float] = dict.fromkeys(names(PLANNED), float("nan"))
    clients, think = None, 0.0
    times: list[float | None]
    lines: list[int | None]
    if isinstance(arrival, TraceArrival):
        replay = replay_trace(arrival, cfg.model)
        tokens = replay.tokens
        times = list(np.asarray(replay.arrival_s, dtype=np.float64).tolist())
        stats = replay.stats
        lines = list(replay.trace_line.tolist())
    else:
        if isinstance(arrival, ClosedLoopArrival):
            clients, think = arrival.clients, arrival.think_ms / 1e3
        if cfg.workload.requests > PLAN_HELD:
            seed = int(rng.integers(0, 2**63 - 1))
            return Workload(_BlockPlan(cfg, seed), clients, think, stats)
        tokens = _draw_tokens(cfg, rng, cfg.workload.requests)
        if isinstance(arrival, ClosedLoopArrival):
            times = [None] * len(tokens)
        else:
            times = list(open_loop_times(arrival, rng, len(tokens)))
        lines = [None] * len(tokens)
    n = len(tokens)
    seeds = rng.integers(0, 2**63 - 1, size=n, dtype=np.int64).tolist()
    draws = rng.random(size=n).tolist()
    reqs = tuple(
        PlannedRequest(i, int(tokens[i]), times[i], seeds[i], draws[i], lines[i]) for i in range(n)
    )
    return Workload(reqs, clients, think, stats)


def tokens_range(workload: Workload) -> tuple[int, int]:
    """The fewest and most tokens a request of ``workload`` loads ((0, 0) when empty),
    in one pass, without a list of them."""
    if isinstance(workload.requests, _BlockPlan):
        return workload.requests.tokens_range()
    least, most = 0, 0
    for i, r in enumerate(workload):
        t = r.tokens
        if i == 0 or t < least:
            least = t
        if t > most:
            most = t
    return least, most


#: A PlannedRequest from its six fields in one tuple, without a Python-level call.
_planned = partial(tuple.__new__, PlannedRequest)


class _BlockPlan(Sequence[PlannedRequest]):
    """``workload.requests`` planned requests drawn ``PLAN_BLOCK`` at a time from ``seed``,
    in the order of :func:`plan_workload` within each block (tokens, arrivals, job seeds,
    failure draws), arrivals continuing from block to block. Iterating twice gives the
    same requests; nothing but the current block is held."""

    def __init__(self, cfg: ExperimentConfig, seed: int) -> None:
        self._cfg = cfg
        self._seed = seed
        self._n = cfg.workload.requests
        spec = cfg.workload.tokens
        self._lengths = (
            read_trace(spec.path).input_length if isinstance(spec, EmpiricalTokens) else None
        )

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> PlannedRequest:  # type: ignore[override]
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return next(itertools.islice(iter(self), i % self._n, None))

    def _blocks(
        self,
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]]:
        """Each block's first id, tokens, arrival times (None: closed loop), job seeds and
        failure draws, drawn in the order of :func:`plan_workload`."""
        cfg, n = self._cfg, self._n
        arrival = cfg.workload.arrival
        closed = isinstance(arrival, ClosedLoopArrival)
        rng = np.random.default_rng(self._seed)
        clock = 0.0
        for first in range(0, n, PLAN_BLOCK):
            size = min(PLAN_BLOCK, n - first)
            tokens = _draw_tokens(cfg, rng, size, self._lengths)
            times = None
            if not closed:
                assert not isinstance(arrival, (ClosedLoopArrival, TraceArrival))
                times, clock = open_loop_block(arrival, rng, first, size, clock)
            seeds = rng.integers(0, 2**63 - 1, size=size, dtype=np.int64)
            draws = rng.random(size=size)
            yield first, tokens, times, seeds, draws

    def __iter__(self) -> Iterator[PlannedRequest]:
        for first, tokens, drawn, seeds, draws in self._blocks():
            size = len(tokens)
            times: list[float | None] = [None] * size if drawn is None else drawn.tolist()
            ids = range(first, first + size)
            lines = itertools.repeat(None, size)  # no trace line: a drawn plan
            t, s, d = tokens.tolist(), seeds.tolist(), draws.tolist()
            columns = zip(ids, t, times, s, d, lines, strict=True)
            yield from map(_planned, columns)  # PlannedRequest(*row), in C

    def tokens_range(self) -> tuple[int, int]:
        """:func:`tokens_range` block by block, without a request object each (a pass
        over ten million of them cost as much as a tenth of the point's simulation)."""
        least, most = 0, 0
        for first, tokens, _times, _seeds, _draws in self._blocks():
            low, high = int(tokens.min()), int(tokens.max())
            least = low if first == 0 or low < least else least
            most = max(most, high)
        return least, most


@dataclass(frozen=True)
class WorkloadPreview:
    """What a point's plan will be, known without drawing anything: its request count,
    the sim.columns.PLANNED figures, and for a trace replay the span and the tokens loaded. It is a
    ``sim.preflight.budget.PlannedLoad`` (the same fields), which the budget estimates from."""

    requests: int
    stats: Mapping[str, float]
    #: Last planned arrival, run time (s); None unless a trace fixes it.
    span_s: float | None = None
    #: Tokens loaded per request: mean, p50, p99, max, min; None unless a trace fixes them.
    mean_tokens: float | None = None
    tokens_p50: float | None = None
    tokens_p99: float | None = None
    max_tokens: int | None = None
    min_tokens: int | None = None
    #: Trace lines that warm the store before the window; None unless a trace replay.
    warm_lines: int | None = None


def preview_workload(
    cfg: ExperimentConfig, memo: dict[str, WorkloadPreview] | None = None
) -> WorkloadPreview:
    """The point's :class:`WorkloadPreview`, without running or drawing anything.

    With a trace the count is what the replay keeps (``arrival.limit`` requests
    measured after ``cache.warm``'s lines, those with nothing to load skipped), not
    ``workload.requests``; planning the replay is cheap (one pass over the trace), so
    callers that show a count or an estimate (``kvsim validate``, the budget, the
    progress bar) ask here instead of reading the config. Pass the same ``memo`` for
    the points of one sweep so that points sharing a trace and geometry replay it once.
    """
    arrival = cfg.workload.arrival
    if not isinstance(arrival, TraceArrival):
        return WorkloadPreview(cfg.workload.requests, dict.fromkeys(names(PLANNED), math.nan))
    key = arrival.model_dump_json() + cfg.model.model_dump_json()
    if memo is not None and key in memo:
        return memo[key]
    replay = replay_trace(arrival, cfg.model)
    tokens = replay.tokens
    p50, p99 = np.percentile(tokens, [50, 99]).tolist()
    out = WorkloadPreview(
        len(tokens),
        replay.stats,
        float(replay.arrival_s[-1]),
        float(tokens.mean()),
        float(p50),
        float(p99),
        int(tokens.max()),
        int(tokens.min()),
        replay.warm_lines,
    )
    if memo is not None:
        memo[key] = out
    return out


def planned_requests(
    cfg: ExperimentConfig, memo: dict[str, WorkloadPreview] | None = None
) -> tuple[int, Mapping[str, float]]:
    """(requests a point will run, the sim.columns.PLANNED figures), as
    :func:`preview_workload` counts them."""
    preview = preview_workload(cfg, memo)
    return preview.requests, preview.stats
