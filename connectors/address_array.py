"""``array``: what if the transfer binding accepted buffers? Returns NumPy arrays.

A what-if, not a drop-in: the upstream binding rejects anything but lists of
Python ints. Here the same ``nogil`` kernel as ``numba`` writes fresh int64
arrays (page faults included, inside the GIL-free section) and they are handed
over as they are, so no Python int or list is ever built. The GIL hold left is
reading the chunk tuples and the block table into arrays — what an upstream API
change to buffers would buy is everything else.

Output: ``addrs`` and ``sizes`` of shape ``(chunks, regions)`` and ``bids`` of
shape ``(chunks,)``, all int64; ``np.asarray(x).tolist()`` gives the list contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from .address_numba import (
    OK,
    call_kernel,
    chunk_array,
    compile_kernel,
    kernel_inputs,
    raise_status,
    table_array,
)
from .base import AddressVariant, gil_free
from .registry import register

__all__ = ["ArrayVariant"]


@register
class ArrayVariant(AddressVariant):
    name = "array"
    description = "What-if: nogil kernel returning int64 arrays (a buffer-accepting binding)."

    def warm_up(self) -> None:
        compile_kernel()
        super().warm_up()

    def prepare_values(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._compute(chunks, block_ids, declare_free=True)

    def _compute(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int], declare_free: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kernel over ``chunks``; ``declare_free`` wraps it in ``gil_free()``.

        For one chunk the kernel's work is tens of nanoseconds and the
        dispatcher's argument unboxing, which holds the GIL, is nearly all of the
        call, so the per-chunk path does not declare it GIL-free.
        """
        ki = kernel_inputs(self)
        regions = len(ki.base)
        n = len(chunks)
        addrs = np.empty((n, regions), dtype=np.int64)
        sizes = np.empty((n, regions), dtype=np.int64)
        bids = np.empty(n, dtype=np.int64)
        if not n:
            return addrs, sizes, bids
        db = self.db
        spans = chunk_array(chunks)
        table = table_array(block_ids)
        counts = np.empty(n, dtype=np.int64)
        with gil_free() if declare_free else nullcontext():
            status, c, _prefix = call_kernel(db, ki, spans, table, addrs, sizes, bids, counts)
        if status != OK:
            raise_status(db, status, c, chunks, block_ids)
        return addrs, sizes, bids

    def prepare_value(self, start: int, end: int, block_ids: Sequence[int]) -> Any:
        """One chunk: rows of the arrays, and the block id as a Python int.

        The block id is looked up here, so that the kernel reads a one-entry table
        instead of converting the request's whole table once per chunk.
        """
        db = self.db
        db.check_span(start, end)
        bid = block_ids[start // db.block_size]
        try:
            addrs, sizes, _bids = self._compute(((0, end - start),), (bid,), declare_free=False)
        except OverflowError:
            raise db.overflow_error((start, end), int(bid)) from None
        return addrs[0], sizes[0], int(bid)
