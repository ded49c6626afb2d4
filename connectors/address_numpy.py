"""``numpy``: the upstream vectorised ``prepare_values`` (PR #48531)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import AddressVariant, PreparedValues
from .registry import register
from .token_database import ChunkAlignmentError, TokenDatabase

#: Chunk bounds the vectorised paths accept: keeps ``end - start`` and rounding in int64.
COORD_LIMIT = 2**61


def check_int64(
    db: TokenDatabase, chunks: Sequence[tuple[int, int]], bids: np.ndarray, counts: np.ndarray
) -> None:
    """Raise instead of letting int64 arithmetic wrap silently (exact: see Int64Bounds)."""
    b = db.int64_bounds
    bad = (bids < b.bid_lo) | (bids > b.bid_hi) | (counts > b.count_hi)
    if bad.any():
        c = int(np.flatnonzero(bad)[0])
        raise db.overflow_error(tuple(chunks[c]), int(bids[c]))


@register
class NumpyVariant(AddressVariant):
    name = "numpy"
    requires = ("numpy",)
    description = "Upstream vectorised prepare_values: one broadcast, then .tolist()."

    def prepare_values(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]
    ) -> PreparedValues:
        if not chunks:
            return [], [], []
        db = self.db
        db.int64_bounds  # noqa: B018 -- raises OverflowError for a base address past int64
        base = np.asarray(db.kv_caches_base_addr, dtype=np.int64)
        blen = np.asarray(db.region_block_len(), dtype=np.int64)
        n = len(chunks)
        try:
            starts = np.fromiter((c[0] for c in chunks), dtype=np.int64, count=n)
            ends = np.fromiter((c[1] for c in chunks), dtype=np.int64, count=n)
        except OverflowError:
            raise OverflowError("a chunk bound does not fit in int64") from None
        if (np.abs(starts) > COORD_LIMIT).any() or (np.abs(ends) > COORD_LIMIT).any():
            raise OverflowError(f"chunk bounds past ±2**61 are not supported (first {chunks[0]})")
        spans = ends - starts
        if (spans <= 0).any() or (spans % db.hash_block_size).any():
            bad = int(np.flatnonzero((spans <= 0) | (spans % db.hash_block_size != 0))[0])
            db.check_span(*chunks[bad])
            raise ChunkAlignmentError(f"chunk {chunks[bad]} is not aligned")
        try:
            bids = np.fromiter(
                (block_ids[i] for i in (starts // db.block_size).tolist()), dtype=np.int64, count=n
            )
        except OverflowError:
            raise OverflowError("a block id does not fit in int64") from None
        block_counts = (spans + db.block_size - 1) // db.block_size
        check_int64(db, chunks, bids, block_counts)
        addrs = base[None, :] + bids[:, None] * blen[None, :]
        sizes = blen[None, :] * block_counts[:, None]
        return addrs.tolist(), sizes.tolist(), bids.tolist()
