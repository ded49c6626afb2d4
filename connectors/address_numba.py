"""``numba``: one ``nogil`` kernel for every chunk, then ``.tolist()`` into the list contract.

The kernel validates each chunk in the reference's order (span, block index,
int64 fit), gathers its block id and writes its addresses (and sizes) in one
pass, with the GIL released; it runs inside :func:`~connectors.base.gil_free` so
the GIL meter subtracts it. What is left holding the GIL is turning the chunk
tuples into arrays and the arrays into Python lists, which is where the time
goes (``rows`` attacks that part).

numba is imported and the kernel compiled in :meth:`NumbaVariant.warm_up`, never
at module import (listing variants stays fast) and never in a measured call
after warm-up. The kernel and the array helpers here are shared by ``rows`` and
``array``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import numpy as np

from .address_numpy import COORD_LIMIT
from .base import AddressVariant, PreparedValues, gil_free
from .registry import register
from .token_database import ChunkAlignmentError, TokenDatabase

__all__ = [
    "KernelInputs",
    "NumbaVariant",
    "call_kernel",
    "chunk_array",
    "kernel",
    "kernel_inputs",
    "raise_status",
    "table_array",
]

OK, BAD_SPAN, BAD_INDEX, BAD_COORD, BAD_ADDRESS, BAD_SIZE = range(6)


def _address_kernel(
    spans: np.ndarray,
    table: np.ndarray,
    base: np.ndarray,
    blen: np.ndarray,
    block_size: int,
    hash_block_size: int,
    bid_lo: int,
    bid_hi: int,
    count_hi: int,
    addrs: np.ndarray,
    sizes: np.ndarray,
    bids: np.ndarray,
    counts: np.ndarray,
) -> tuple[int, int, int]:
    """Fill ``addrs``/``bids``/``counts`` (and ``sizes`` when it has one row per chunk).

    ``spans`` holds one ``(start, end)`` row per chunk.

    Returns ``(status, chunk, prefix)``: ``status`` is OK or the first error, at
    chunk ``chunk``; ``prefix`` is how many leading chunks share chunk 0's block
    count (all of them when the request is made of full chunks), which lets the
    caller build equal size rows once. Index semantics are Python's: a negative
    index counts from the end of the table.
    """
    n = spans.shape[0]
    regions = base.shape[0]
    ntab = table.shape[0]
    with_sizes = sizes.shape[0] == n
    prefix = n
    for c in range(n):
        s = spans[c, 0]
        e = spans[c, 1]
        if s < -COORD_LIMIT or s > COORD_LIMIT or e < -COORD_LIMIT or e > COORD_LIMIT:
            return BAD_COORD, c, prefix
        span = e - s
        if span <= 0 or span % hash_block_size != 0:
            return BAD_SPAN, c, prefix
        i = s // block_size
        if i < 0:
            i += ntab
        if i < 0 or i >= ntab:
            return BAD_INDEX, c, prefix
        b = table[i]
        if b < bid_lo or b > bid_hi:
            return BAD_ADDRESS, c, prefix
        k = (span + block_size - 1) // block_size
        if k > count_hi:
            return BAD_SIZE, c, prefix
        bids[c] = b
        counts[c] = k
        if prefix == n and k != counts[0]:
            prefix = c
        for r in range(regions):
            addrs[c, r] = base[r] + b * blen[r]
        if with_sizes:
            for r in range(regions):
                sizes[c, r] = blen[r] * k
    return OK, n, prefix


_compile_lock = threading.Lock()
_compiled: list[Callable[..., tuple[int, int, int]]] = []


def kernel() -> Callable[..., tuple[int, int, int]]:
    """The compiled kernel: ``@njit(nogil=True, cache=True)``; imports numba on first use."""
    if not _compiled:
        with _compile_lock:
            if not _compiled:
                import numba  # heavy: numba loads only when a kernel compiles

                fn = numba.njit(nogil=True, cache=True)(_address_kernel)
                _compiled.append(fn)
    return _compiled[0]


def compile_kernel() -> None:
    """Compile (or load from numba's cache) the one signature every caller uses."""
    e = np.zeros(1, dtype=np.int64)
    m = np.zeros((1, 1), dtype=np.int64)
    kernel()(np.array([[0, 1]], dtype=np.int64), e, e, e, 1, 1, -1, 1, 1, m, m, e.copy(), e.copy())


def chunk_array(chunks: Sequence[tuple[int, int]]) -> np.ndarray:
    """``chunks`` as an ``(n, 2)`` int64 array of (start, end) rows.

    ``np.fromiter`` over the flattened pairs was the cheapest path measured (about
    40 ns a chunk); ``zip(*chunks)`` is as fast only with the GC paused, as it
    keeps an iterator per chunk alive at once, and ``np.array(chunks)`` is twice
    as slow.
    """
    n = len(chunks)
    flat = chain.from_iterable(chunks)
    try:
        out = np.fromiter(flat, np.int64, 2 * n).reshape(n, 2)
    except OverflowError:
        raise OverflowError("a chunk bound does not fit in int64") from None
    except ValueError:
        raise ValueError("chunks must be (start, end) pairs") from None
    if next(flat, None) is not None:
        raise ValueError("chunks must be (start, end) pairs")
    return out


def table_array(block_ids: Sequence[int]) -> np.ndarray:
    """The block table as C-contiguous int64 (the one layout the kernel is compiled for)."""
    try:
        return np.ascontiguousarray(block_ids, dtype=np.int64)
    except OverflowError:
        raise OverflowError("a block id does not fit in int64") from None


class KernelInputs:
    """Per-geometry constants of the kernel, computed once per variant instance."""

    __slots__ = ("base", "blen", "bounds", "region_blen")

    def __init__(self, db: TokenDatabase) -> None:
        self.bounds = db.int64_bounds  # raises OverflowError for a base past int64
        self.region_blen = db.region_block_len()
        self.base = np.asarray(db.kv_caches_base_addr, dtype=np.int64)
        self.blen = np.asarray(self.region_blen, dtype=np.int64)


def call_kernel(
    db: TokenDatabase,
    ki: KernelInputs,
    spans: np.ndarray,
    table: np.ndarray,
    addrs: np.ndarray,
    sizes: np.ndarray,
    bids: np.ndarray,
    counts: np.ndarray,
) -> tuple[int, int, int]:
    """The kernel with the geometry's arguments filled in: (status, bad chunk, prefix)."""
    b = ki.bounds
    return kernel()(
        spans,
        table,
        ki.base,
        ki.blen,
        db.block_size,
        db.hash_block_size,
        b.bid_lo,
        b.bid_hi,
        b.count_hi,
        addrs,
        sizes,
        bids,
        counts,
    )


def kernel_inputs(variant: Any) -> KernelInputs:
    """``variant``'s cached KernelInputs (built on first use, not in the constructor)."""
    ki = variant.__dict__.get("_kernel_inputs")
    if ki is None:
        ki = variant.__dict__["_kernel_inputs"] = KernelInputs(variant.db)
    return ki


def raise_status(
    db: TokenDatabase,
    status: int,
    c: int,
    chunks: Sequence[tuple[int, int]],
    block_ids: Sequence[int],
) -> None:
    """Raise what the scalar reference raises for chunk ``c`` (OverflowError where it would not)."""
    start, end = chunks[c]
    if status == BAD_SPAN:
        db.check_span(start, end)
        raise ChunkAlignmentError(f"chunk {chunks[c]} is not aligned")  # pragma: no cover
    if status == BAD_INDEX:
        i = start // db.block_size
        raise IndexError(
            f"chunk {chunks[c]}: block index {i} is out of range for {len(block_ids)} block ids"
        )
    if status == BAD_COORD:
        raise OverflowError(f"chunk {chunks[c]}: bounds past ±2**61 are not supported")
    raise db.overflow_error((start, end), int(block_ids[start // db.block_size]))


@register
class NumbaVariant(AddressVariant):
    name = "numba"
    requires = ("numpy", "numba")
    description = "nogil numba kernel (GIL-free, declared) + .tolist() into lists."

    def warm_up(self) -> None:
        compile_kernel()
        super().warm_up()

    def prepare_values(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]
    ) -> PreparedValues:
        if not chunks:
            return [], [], []
        ki = kernel_inputs(self)
        db = self.db
        spans = chunk_array(chunks)
        table = table_array(block_ids)
        n, regions = len(spans), len(ki.base)
        addrs = np.empty((n, regions), dtype=np.int64)
        sizes = np.empty((n, regions), dtype=np.int64)
        bids = np.empty(n, dtype=np.int64)
        counts = np.empty(n, dtype=np.int64)
        with gil_free():
            status, c, _prefix = call_kernel(db, ki, spans, table, addrs, sizes, bids, counts)
        if status != OK:
            raise_status(db, status, c, chunks, block_ids)
        return addrs.tolist(), sizes.tolist(), bids.tolist()

    def prepare_value(
        self, start: int, end: int, block_ids: Sequence[int]
    ) -> tuple[list[int], list[int], int]:
        """One chunk (the per_chunk handler): the kernel on a one-entry table.

        Not declared GIL-free: for one chunk the kernel's work is tens of
        nanoseconds and the dispatcher's argument unboxing, which holds the GIL,
        is nearly all of the call.
        """
        db = self.db
        db.check_span(start, end)
        bid = block_ids[start // db.block_size]
        ki = kernel_inputs(self)
        span = np.array([[0, end - start]], dtype=np.int64)
        z = np.zeros(1, dtype=np.int64)
        table = table_array([bid])
        regions = len(ki.base)
        addrs = np.empty((1, regions), dtype=np.int64)
        sizes = np.empty((1, regions), dtype=np.int64)
        bids = np.empty(1, dtype=np.int64)
        status, _c, _p = call_kernel(db, ki, span, table, addrs, sizes, bids, z.copy())
        if status != OK:
            raise db.overflow_error((start, end), int(bid))
        return addrs[0].tolist(), sizes[0].tolist(), int(bids[0])
