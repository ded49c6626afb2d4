"""``scalar``: the original per-chunk Python loop over regions (before PR #48531)."""

from __future__ import annotations

from collections.abc import Sequence

from .base import AddressVariant, PreparedValues
from .registry import register


@register
class ScalarVariant(AddressVariant):
    name = "scalar"
    description = "Original per-chunk Python loop over regions (reference)."

    def prepare_value(self, start: int, end: int, block_ids: Sequence[int]):
        return self.db.prepare_value(start, end, block_ids)

    def prepare_values(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]
    ) -> PreparedValues:
        addr_lists, size_lists, bids = [], [], []
        for start, end in chunks:
            a, s, b = self.db.prepare_value(start, end, block_ids)
            addr_lists.append(a)
            size_lists.append(s)
            bids.append(b)
        return addr_lists, size_lists, bids
