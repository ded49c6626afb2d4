"""What the KV store remembers of earlier requests: blocks by hash id, bounded, with eviction.

Trace replay asks it, request by request in planning order, how many leading
blocks of a prompt are already stored (only a prefix can be loaded: a block is
useless once one before it is missing), then stores the request's blocks, as
the engine does after prefill. The hit ratio of a run thus emerges from the
trace's sharing, the capacity and the policy, deterministically.

A request's blocks are stored (and, under LRU, touched) from the last to the
first, so that its head — the part other requests share — is the most recent
and is evicted last, as vLLM's prefix cache frees a request's tail first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Literal

__all__ = ["EvictionPolicy", "PrefixCache"]

EvictionPolicy = Literal["lru", "fifo"]


class PrefixCache:
    """Block ids the store holds: at most ``capacity`` of them (None: unbounded)."""

    def __init__(self, capacity: int | None = None, policy: EvictionPolicy = "lru") -> None:
        if capacity is not None and capacity < 1:
            raise ValueError(f"capacity must be at least one block, got {capacity}")
        if policy not in ("lru", "fifo"):
            raise ValueError(f"unknown eviction policy {policy!r}; allowed: lru, fifo")
        self._capacity = capacity
        self._policy = policy
        #: Block id -> None, in eviction order (first = next to go).
        self._blocks: OrderedDict[int, None] = OrderedDict()
        self._evictions = 0

    @property
    def capacity(self) -> int | None:
        return self._capacity

    @property
    def policy(self) -> EvictionPolicy:
        return self._policy

    @property
    def evictions(self) -> int:
        """Blocks dropped so far to make room."""
        return self._evictions

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, block_id: object) -> bool:
        return block_id in self._blocks

    def match_prefix(self, block_ids: Sequence[int]) -> int:
        """How many leading ``block_ids`` are stored; changes nothing."""
        n = 0
        for b in block_ids:
            if b not in self._blocks:
                break
            n += 1
        return n

    def store(self, block_ids: Sequence[int]) -> None:
        """Remember ``block_ids`` (refreshing known ones under LRU), evicting past capacity."""
        blocks = self._blocks
        lru = self._policy == "lru"
        for b in reversed(block_ids):
            if b in blocks:
                if lru:
                    blocks.move_to_end(b)
            else:
                blocks[b] = None
        if self._capacity is not None:
            while len(blocks) > self._capacity:
                blocks.popitem(last=False)
                self._evictions += 1

    def access(self, block_ids: Sequence[int]) -> int:
        """One request: the stored prefix length in blocks, then its blocks are stored."""
        hit = self.match_prefix(block_ids)
        self.store(block_ids)
        return hit
