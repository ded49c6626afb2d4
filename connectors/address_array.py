"""``array``: what if the transfer binding accepted buffers? Buffers in, NumPy arrays out.

A what-if, not a drop-in: the upstream binding rejects anything but lists of
Python ints. A binding that accepted buffers for its output would accept them
for its input too, so this variant declares ``buffer_inputs = True``: it takes
the chunks as an ``(n, 2)`` int64 array of (start, end) rows and the block table
as an int64 array, as a buffer-native request handler would hand them over, and
``kvsim bench connectors`` converts the bench's lists into that form outside the
measured region (as it prepares every variant's lists outside it), marking the
row ``inputs=arrays`` — it is NOT the list-contract path. Lists are accepted as
well (converted here, inside the call, at about 40 ns a chunk).

The same ``nogil`` kernel as ``numba`` writes fresh int64 arrays (page faults
included, inside the GIL-free section) and they are handed over as they are,
so no Python int or list is ever built. What still holds the GIL is a fixed
per-call cost: argument checks, four ``np.empty`` and the kernel dispatcher.

In the simulator (:meth:`ArrayVariant.run`) the chunk spans are built as an
array straight from the token count, as a buffer-native ``process_tokens``
would; the job's block table arrives as a list and is converted in the job.

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
from .base import AddressVariant, LoadJob, gil_free, mark_stage
from .registry import register

__all__ = ["ArrayVariant", "span_array"]

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def span_array(chunks: Any) -> np.ndarray:
    """``chunks`` as a C-contiguous ``(n, 2)`` int64 array; an int64 array passes as it is."""
    if isinstance(chunks, np.ndarray):
        if chunks.ndim != 2 or chunks.shape[1] != 2:
            raise ValueError(f"chunks must be an (n, 2) array, got shape {chunks.shape}")
        if chunks.dtype != np.int64:
            raise TypeError(f"chunks must be int64, got {chunks.dtype}")
        return np.ascontiguousarray(chunks)
    return chunk_array(chunks)


@register
class ArrayVariant(AddressVariant):
    name = "array"
    requires = ("numpy", "numba")
    description = "What-if: int64 buffers in, nogil kernel, int64 arrays out (no lists)."
    buffer_inputs = True

    def warm_up(self) -> None:
        compile_kernel()
        super().warm_up()
        n = self.db.block_size
        self.prepare_values(np.array([[0, n]], dtype=np.int64), np.zeros(1, dtype=np.int64))

    def run(self, job: LoadJob, group: int, handler: str) -> tuple[list[str], Any]:
        """Store keys as every variant builds them; spans straight from the token count."""
        mark_stage("keys")
        keys = [k for _s, _e, k in self.db.chunk_list(job.tokens, job.block_hashes, job.hash_len)]
        mark_stage("addresses")
        bs = self.db.block_size
        starts = np.arange(0, job.tokens, bs, dtype=np.int64)
        spans = np.stack([starts, np.minimum(starts + bs, job.tokens)], axis=1)
        table = np.asarray(job.block_ids[group], dtype=np.int64)
        return keys, self.addresses(spans, table, handler)

    def prepare_values(self, chunks: Any, block_ids: Any) -> Arrays:
        return self._compute(chunks, block_ids, declare_free=True)

    def _compute(self, chunks: Any, block_ids: Any, declare_free: bool) -> Arrays:
        """The kernel over ``chunks``; ``declare_free`` wraps it in ``gil_free()``.

        For one chunk the kernel's work is tens of nanoseconds and the
        dispatcher's argument unboxing, which holds the GIL, is nearly all of the
        call, so the per-chunk path does not declare it GIL-free.
        """
        ki = kernel_inputs(self)
        spans = span_array(chunks)
        n = spans.shape[0]
        regions = len(ki.base)
        addrs = np.empty((n, regions), dtype=np.int64)
        sizes = np.empty((n, regions), dtype=np.int64)
        bids = np.empty(n, dtype=np.int64)
        if not n:
            return addrs, sizes, bids
        db = self.db
        table = table_array(block_ids)
        counts = np.empty(n, dtype=np.int64)
        with gil_free() if declare_free else nullcontext():
            status, c, _prefix = call_kernel(db, ki, spans, table, addrs, sizes, bids, counts)
        if status != OK:  # the error path: the reference's messages, from Python values
            if isinstance(chunks, np.ndarray):
                chunks = [tuple(r) for r in spans.tolist()]
            if isinstance(block_ids, np.ndarray):
                block_ids = block_ids.tolist()
            raise_status(db, status, c, chunks, block_ids)
        return addrs, sizes, bids

    def prepare_value(self, start: int, end: int, block_ids: Sequence[int]) -> Any:
        """One chunk: rows of the arrays, and the block id as a Python int.

        The block id is looked up here, so that the kernel reads a one-entry table
        instead of converting the request's whole table once per chunk.
        """
        db = self.db
        start, end = int(start), int(end)
        db.check_span(start, end)
        bid = int(block_ids[start // db.block_size])
        try:
            addrs, sizes, _bids = self._compute(((0, end - start),), (bid,), declare_free=False)
        except OverflowError:
            raise db.overflow_error((start, end), bid) from None
        return addrs[0], sizes[0], bid
