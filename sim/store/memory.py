"""Memory guard of the real store: what a point needs in RAM, against what the machine has.

A real-store point holds two big things in memory: the KV buffers (every block
of every region of every group, registered with the client) and the store
segment that receives the puts (all the point's chunks, put before the clock
starts, plus headroom under the master's eviction watermark of 0.9). Both are
real RAM; ``kvsim validate`` and ``kvsim run`` refuse a point whose sum does not
fit the budget, showing the arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from connectors import registry
from sim.config.experiment import ExperimentConfig
from sim.store.kv_buffers import KVBuffers
from sim.workload.plan import plan_workload

__all__ = [
    "MemoryPlan",
    "available_bytes",
    "check_real_store",
    "memory_plan",
    "request_chunks",
]

MIB = 1 << 20
GIB = 1 << 30
#: The segment is filled to at most this fraction (the master evicts from 0.9 on).
SEGMENT_FILL = 0.85
SEGMENT_SLACK = 16 * MIB
#: Budget fraction of the machine's available memory when none is configured.
BUDGET_FRACTION = 0.8


def available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo, or None where there is none."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


@dataclass(frozen=True)
class MemoryPlan:
    kv_bytes: int
    put_bytes: int
    segment_bytes: int
    local_bytes: int
    budget_bytes: int | None
    budget_source: str
    max_chunks: int
    slots: int

    @property
    def total_bytes(self) -> int:
        return self.kv_bytes + self.segment_bytes + self.local_bytes

    @property
    def fits(self) -> bool:
        return self.budget_bytes is None or self.total_bytes <= self.budget_bytes

    def breakdown(self) -> str:
        return (
            f"KV buffers {_gib(self.kv_bytes)} + store segment {_gib(self.segment_bytes)} "
            f"(puts {_gib(self.put_bytes)}) + local buffer {_gib(self.local_bytes)} = "
            f"{_gib(self.total_bytes)}"
        )

    def arithmetic(self) -> str:
        budget = "no budget known" if self.budget_bytes is None else _gib(self.budget_bytes)
        return (
            f"{self.breakdown()} {'<=' if self.fits else '>'} budget {budget} "
            f"({self.budget_source})"
        )


def request_chunks(cfg: ExperimentConfig, repeat: int) -> np.ndarray:
    """Chunks of every request the point plans for ``repeat`` (one group)."""
    workload = plan_workload(cfg, np.random.default_rng([cfg.seed, repeat]))
    tokens = np.fromiter((r.tokens for r in workload), dtype=np.int64, count=len(workload))
    return -(-tokens // cfg.model.block_size)


def memory_plan(cfg: ExperimentConfig, chunks: np.ndarray | None = None) -> MemoryPlan:
    """RAM one point needs with the real store (the largest of its repeats)."""
    geo = cfg.model
    mc = cfg.store.mooncake
    if chunks is None:
        per_rep = [request_chunks(cfg, k) for k in range(cfg.repeats)]
        put_chunks = max(int(c.sum()) for c in per_rep)
        max_chunks = max((int(c.max()) for c in per_rep if c.size), default=0)
    else:
        put_chunks, max_chunks = int(chunks.sum()), int(chunks.max(initial=0))
    put_bytes = put_chunks * geo.bytes_per_block * geo.kv_groups
    if mc.segment_mib is not None:
        segment = mc.segment_mib * MIB
    else:
        segment = math.ceil(put_bytes / SEGMENT_FILL / MIB) * MIB + SEGMENT_SLACK
    limit = getattr(getattr(cfg, "limits", None), "max_memory_gib", None)
    if mc.memory_budget_gib is not None:
        budget: int | None = int(mc.memory_budget_gib * GIB)
        source = "store.mooncake.memory_budget_gib"
    elif limit is not None:
        budget, source = int(limit * GIB), "limits.max_memory_gib"
    else:
        avail = available_bytes()
        budget = None if avail is None else int(avail * BUDGET_FRACTION)
        source = f"{BUDGET_FRACTION:.0%} of available memory now"
    return MemoryPlan(
        kv_bytes=KVBuffers.bytes_needed(geo),
        put_bytes=put_bytes,
        segment_bytes=segment,
        local_bytes=mc.local_buffer_mib * MIB,
        budget_bytes=budget,
        budget_source=source,
        max_chunks=max_chunks,
        slots=geo.num_blocks // max_chunks if max_chunks else 0,
    )


def check_real_store(cfg: ExperimentConfig, plan: MemoryPlan | None = None) -> list[str]:
    """Why this point cannot run on the real store (empty: it can), one line each."""
    if cfg.store.kind != "mooncake":
        return []

    problems = []
    if cfg.mode != "real":
        problems.append(
            f"store.kind: mooncake moves real bytes and runs only in mode: real (not {cfg.mode})"
        )
    geo = cfg.model
    bad = [b for b in geo.block_len if b % 8]
    if bad:
        problems.append(
            f"model.block_len: {bad[0]} bytes per block; the real store needs multiples of 8"
        )
    try:
        variant = registry.get_address_variant(cfg.connector.variant)
    except KeyError:
        variant = None  # the variant check reports it
    if variant is not None and not variant.computes_addresses:
        problems.append(
            f"connector.variant: {cfg.connector.variant!r} computes no addresses; the real "
            "store needs one that does (scalar, numpy, …)"
        )
    plan = plan or memory_plan(cfg)
    if plan.max_chunks and plan.slots < 1:
        problems.append(
            f"model.num_blocks: {geo.num_blocks} blocks cannot hold a request of "
            f"{plan.max_chunks} chunks; raise num_blocks to at least {plan.max_chunks}"
        )
    if not plan.fits:
        problems.append(f"memory: the point does not fit: {plan.arithmetic()}")
    return problems
