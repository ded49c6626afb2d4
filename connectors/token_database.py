"""Token ranges -> store keys and memory addresses, with the upstream semantics.

Mirrors ``ChunkedTokenDatabase`` of vLLM's Mooncake store connector: chunks of
``block_size`` tokens keyed by the last ``hash_block_size`` hash they cover, and
``prepare_value`` as the scalar reference every variant must match exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["ChunkAlignmentError", "TokenDatabase", "cdiv"]


class ChunkAlignmentError(ValueError):
    """A chunk whose span is not a multiple of ``hash_block_size``."""


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


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
