"""``numpy``: the upstream vectorised ``prepare_values`` (PR #48531)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import AddressVariant, PreparedValues
from .registry import register
from .token_database import ChunkAlignmentError


def check_int64(base: np.ndarray, blen: np.ndarray, max_block_id: int, max_blocks: int) -> None:
    """Raise instead of letting int64 arithmetic wrap silently."""
    limit = 2**63 - 1
    top_addr = int(base.max()) + int(max_block_id) * int(blen.max())
    top_size = int(blen.max()) * int(max_blocks)
    if top_addr > limit or top_size > limit or int(base.min()) < 0 or max_block_id < 0:
        raise OverflowError(f"address {top_addr:#x} or size {top_size} does not fit in int64")


@register
class NumpyVariant(AddressVariant):
    name = "numpy"
    description = "Upstream vectorised prepare_values: one broadcast, then .tolist()."

    def prepare_values(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]
    ) -> PreparedValues:
        if not chunks:
            return [], [], []
        db = self.db
        base = np.asarray(db.kv_caches_base_addr, dtype=np.int64)
        blen = np.asarray(db.region_block_len(), dtype=np.int64)
        n = len(chunks)
        starts = np.fromiter((c[0] for c in chunks), dtype=np.int64, count=n)
        spans = np.fromiter((c[1] for c in chunks), dtype=np.int64, count=n) - starts
        if (spans <= 0).any() or (spans % db.hash_block_size).any():
            bad = int(np.flatnonzero((spans <= 0) | (spans % db.hash_block_size != 0))[0])
            db.check_span(*chunks[bad])
            raise ChunkAlignmentError(f"chunk {chunks[bad]} is not aligned")
        bids = np.fromiter(
            (block_ids[i] for i in (starts // db.block_size).tolist()), dtype=np.int64, count=n
        )
        block_counts = (spans + db.block_size - 1) // db.block_size
        check_int64(base, blen, int(bids.max()), int(block_counts.max()))
        addrs = base[None, :] + bids[:, None] * blen[None, :]
        sizes = blen[None, :] * block_counts[:, None]
        return addrs.tolist(), sizes.tolist(), bids.tolist()
