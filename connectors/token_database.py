"""Token ranges -> store keys and memory addresses, with the upstream semantics.

Mirrors ``ChunkedTokenDatabase`` of vLLM's Mooncake store connector: chunks of
``block_size`` tokens keyed by the last ``hash_block_size`` hash they cover, and
``prepare_value`` as the scalar reference every variant must match exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

__all__ = ["INT64_MAX", "INT64_MIN", "ChunkAlignmentError", "Int64Bounds", "TokenDatabase", "cdiv"]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


class ChunkAlignmentError(ValueError):
    """A chunk whose span is not a multiple of ``hash_block_size``."""


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Int64Bounds:
    """Block ids and block counts for which every address and size fits in int64.

    Vectorised variants compute in int64, which wraps silently; checking each
    chunk's block id against ``[bid_lo, bid_hi]`` and its block count against
    ``count_hi`` is exact (an address is monotonic in the block id), and costs
    two comparisons instead of a 128-bit product per element.
    """

    bid_lo: int
    bid_hi: int
    count_hi: int


@dataclass(frozen=True)
class TokenDatabase:
    """Geometry of one KV-cache group, as the connector's worker sees it."""

    kv_caches_base_addr: tuple[int, ...]
    block_len: tuple[int, ...]
    block_size: int
    hash_block_size: int
    key_prefix: str = "model@tp_rank:0@pcp0@dcp0@pp_rank:0@group:0"

    def __post_init__(self) -> None:
        if self.block_size % self.hash_block_size:
            raise ValueError(
                f"block_size ({self.block_size}) must be a multiple of "
                f"hash_block_size ({self.hash_block_size})"
            )
        if not self.block_len:
            raise ValueError("block_len must not be empty")

    @classmethod
    def from_geometry(cls, geometry, group: int = 0) -> TokenDatabase:
        return cls(
            kv_caches_base_addr=tuple(geometry.base_addrs(group)),
            block_len=tuple(geometry.block_len),
            block_size=geometry.block_size,
            hash_block_size=geometry.chunk_granularity,
            key_prefix=f"model@tp_rank:0@pcp0@dcp0@pp_rank:0@group:{group}",
        )

    @property
    def regions(self) -> int:
        return len(self.kv_caches_base_addr)

    def region_block_len(self) -> list[int]:
        """block_len expanded to one entry per region (the list repeats)."""
        n = len(self.block_len)
        return [self.block_len[r % n] for r in range(self.regions)]

    @cached_property
    def int64_bounds(self) -> Int64Bounds:
        """Exact int64 limits of this geometry; OverflowError if a base address alone does not fit.

        For ``b = block_len[r]`` and ``a = base[r]``: with ``b > 0`` the address
        ``a + id * b`` fits iff ``ceil((MIN - a) / b) <= id <= floor((MAX - a) / b)``
        (mirrored for ``b < 0``; no limit for ``b == 0``), and ``b * count`` fits iff
        ``count <= MAX // b`` (``MIN // b`` for ``b < 0``).
        """
        lo, hi, count_hi = INT64_MIN, INT64_MAX, INT64_MAX
        for r, (a, b) in enumerate(
            zip(self.kv_caches_base_addr, self.region_block_len(), strict=True)
        ):
            if not INT64_MIN <= a <= INT64_MAX:
                raise OverflowError(f"region {r}: base address {a:#x} does not fit in int64")
            if not INT64_MIN <= b <= INT64_MAX:
                raise OverflowError(f"region {r}: block_len {b} does not fit in int64")
            if b > 0:
                hi = min(hi, (INT64_MAX - a) // b)
                lo = max(lo, -((a - INT64_MIN) // b))
                count_hi = min(count_hi, INT64_MAX // b)
            elif b < 0:
                lo = max(lo, -((INT64_MAX - a) // -b))
                hi = min(hi, (a - INT64_MIN) // -b)
                count_hi = min(count_hi, INT64_MIN // b)
        return Int64Bounds(lo, hi, count_hi)

    def overflow_error(self, chunk: tuple[int, int], block_id: int) -> OverflowError:
        """The error a vectorised path raises for ``chunk``: names the first value past int64."""
        count = cdiv(chunk[1] - chunk[0], self.block_size)
        for r, (a, b) in enumerate(
            zip(self.kv_caches_base_addr, self.region_block_len(), strict=True)
        ):
            addr, size = a + block_id * b, b * count
            for what, v in (("address", addr), ("size", size)):
                if not INT64_MIN <= v <= INT64_MAX:
                    return OverflowError(
                        f"chunk {chunk}, region {r}: {what} {v:#x} (block id {block_id}) "
                        "does not fit in int64; the vectorised path would wrap it"
                    )
        return OverflowError(f"chunk {chunk}: block id {block_id} or bounds do not fit in int64")

    def check_span(self, start: int, end: int) -> None:
        if end <= start or (end - start) % self.hash_block_size:
            raise ChunkAlignmentError(
                f"chunk ({start}, {end}) spans {end - start} tokens, not a positive "
                f"multiple of hash_block_size {self.hash_block_size}"
            )

    def prepare_value(
        self, start: int, end: int, block_ids: Sequence[int]
    ) -> tuple[list[int], list[int], int]:
        """The original per-chunk loop over regions: the reference of every variant."""
        self.check_span(start, end)
        addr_list = []
        size_list = []
        block_id = block_ids[start // self.block_size]
        length = len(self.block_len)
        for index, base_addr in enumerate(self.kv_caches_base_addr):
            addr = base_addr + block_id * self.block_len[index % length]
            size = self.block_len[index % length] * cdiv(end - start, self.block_size)
            addr_list.append(addr)
            size_list.append(size)
        return addr_list, size_list, block_id

    def chunk_spans(self, token_len: int) -> Iterator[tuple[int, int]]:
        """(start, end) of each store chunk covering ``token_len`` tokens."""
        for start in range(0, token_len, self.block_size):
            yield start, min(start + self.block_size, token_len)

    def chunk_list(
        self, token_len: int, block_hashes: bytes, hash_len: int = 32
    ) -> list[tuple[int, int, str]]:
        """(start, end, store key) per chunk; the key is the hex of the chunk's last hash."""
        if token_len % self.hash_block_size:
            raise ChunkAlignmentError(
                f"token_len {token_len} is not a multiple of hash_block_size {self.hash_block_size}"
            )
        if token_len // self.hash_block_size * hash_len > len(block_hashes):
            n = len(block_hashes) // hash_len
            raise ValueError(f"{n} hashes cannot cover {token_len} tokens")
        prefix = self.key_prefix
        out = []
        for start, end in self.chunk_spans(token_len):
            off = (end // self.hash_block_size - 1) * hash_len
            out.append((start, end, f"{prefix}@{block_hashes[off : off + hash_len].hex()}"))
        return out
