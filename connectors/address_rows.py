"""``rows``: the list contract at close to the cost of building the lists themselves.

Where the time goes in ``numpy``/``numba`` (seed geometry: 2,258 chunks × 61
regions): the arithmetic is ~0.1 ms, but two ``.tolist()`` calls create 275K
Python ints and 4,516 lists, and the cyclic GC, triggered every 700 new
containers, scans those lists while they are being built. This variant:

1. runs the shared ``nogil`` kernel (validation, block ids, addresses) into a
   per-thread scratch buffer, declared GIL-free — no fresh 1 MiB array to
   page-fault and free on every request;
2. builds the address rows with one ``ndarray.tolist()`` — every address is a
   distinct value, so these ints must be created; this is the floor;
3. builds each distinct size row once (a full chunk's row is the same for every
   full chunk) and gives every chunk a ``list.copy()`` of it: 61 reference copies
   instead of 61 new ints. ``share_size_rows: true`` hands out one list object for
   all equal rows instead (no copies at all); that still meets "lists of Python
   ints", but a consumer that mutates one size row mutates all of them — safe for
   a binding that only reads, which is why it is an option and not the default;
4. pauses the cyclic GC while it builds (``pause_gc``), restoring the previous
   state. This does NOT remove the GC's work (about 0.25 µs per new list of 61
   ints): the new lists stay in generation 0 and the next container allocation,
   on whatever thread, collects them while they are alive — in ``kvsim run``
   usually the same job a moment later, or another thread while the transfer
   runs. It only moves the work out of this call (and avoids several partial
   collections inside it); ``kvsim bench connectors`` reports it as
   ``gc_debt_ms`` and the sustained hold includes it. ``share_size_rows``
   halves it (half as many lists);
5. optionally (``promote_young: true``, off by default) ends the pause with
   ``gc.freeze(); gc.unfreeze()``: in CPython 3.11 (read in its gcmodule.c) both
   are O(1) list splices (``gc_list_merge`` of every generation into the permanent
   one, then of the permanent one into the oldest) that also zero the
   generation counters. The result lists land in the oldest generation, which
   only full collections scan, so results freed by refcount before the next
   full collection are never scanned: the debt is gone, not moved. The price,
   which is why it is an explicit option: it promotes EVERY young object of the
   process, on every thread, so their cyclic garbage waits for a full
   collection (more memory held longer; full collections also come later, as
   promoted objects do not count towards their trigger); and ``unfreeze`` hands
   anything frozen before (e.g. a server's ``gc.freeze()`` after start-up) back
   to the collector, so the next full collection scans it. Do not use it in a
   process that relies on ``gc.freeze()``. Other versions are unverified: free-threaded
   builds make ``freeze`` a no-op, and 3.14's incremental collector scans the
   old generation in increments, so the saving may vanish there.

``prepare_value`` (the per_chunk handler) is a pure-Python fast path: ``map`` over
precomputed per-region lists, and a copy of the cached size row.
"""

from __future__ import annotations

import gc
import operator
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import repeat
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .address_numba import (
    OK,
    call_kernel,
    chunk_array,
    compile_kernel,
    kernel_inputs,
    raise_status,
    table_array,
)
from .base import AddressVariant, PreparedValues, gil_free
from .registry import register
from .token_database import TokenDatabase, cdiv

__all__ = [
    "RowsOptions",
    "RowsVariant",
    "gc_paused",
    "pause_gc",
    "promote_young",
    "resume_gc",
]

#: Scratch buffers larger than this (elements) are not kept between requests.
_SCRATCH_KEEP = 1 << 21
#: Distinct block counts whose size rows are cached per instance.
_SIZE_CACHE = 64
_NO_SIZES = np.empty((0, 0), dtype=np.int64)

_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = False


def pause_gc() -> None:
    """Disable the cyclic GC until the matching :func:`resume_gc`; nestable, thread-safe.

    The GC switch is process-wide, so pauses from several threads are counted:
    the first one in records whether the GC was enabled, the last one out
    restores exactly that. (A ``gc.disable()`` made by other code while a pause
    is open is undone when the pause ends.) Plain functions rather than a
    context manager: leaving a generator-based one allocates an exception
    object right after the GC is back on, which would trigger the deferred
    collection inside this call.
    """
    global _gc_pausers, _gc_was_enabled
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1


def resume_gc() -> None:
    """End one :func:`pause_gc`; the last one out re-enables the GC if it was enabled.

    ``gc.enable()`` is the very last thing done, outside the lock's ``with``
    (whose ``__exit__`` call allocates an argument tuple): any container
    allocated after it would run the deferred collection here. Enabling after
    the release is safe: a pause that starts in between merely records "was
    disabled", and this call still turns the GC back on.
    """
    global _gc_pausers
    _gc_lock.acquire()
    _gc_pausers -= 1
    enable = _gc_pausers == 0 and _gc_was_enabled
    _gc_lock.release()
    if enable:
        gc.enable()


def promote_young() -> None:
    """Move every tracked object of the process to the oldest generation, in O(1).

    ``gc.freeze()`` splices every generation onto the permanent one and zeroes
    the counters; ``gc.unfreeze()`` splices the permanent one onto the oldest.
    Objects frozen before are unfrozen too (see the module docstring).
    """
    gc.freeze()
    gc.unfreeze()


@contextmanager
def gc_paused() -> Iterator[None]:
    """``with gc_paused():`` — :func:`pause_gc` / :func:`resume_gc` around a block."""
    pause_gc()
    try:
        yield
    finally:
        resume_gc()


class RowsOptions(BaseModel):
    """connector.options of the rows variant."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    pause_gc: bool = Field(
        True,
        description="Pause the cyclic GC while building the result (state restored); "
        "the scan of the new lists happens at the next allocation instead.",
    )
    share_size_rows: bool = Field(
        False,
        description="Equal size rows are one list object (no copies); a consumer that "
        "mutates a size row then changes every equal row.",
    )
    promote_young: bool = Field(
        False,
        description="After building, gc.freeze(); gc.unfreeze(): every young object of "
        "the process (not only the result) moves to the oldest generation, so young "
        "collections never scan the result; unfreezes anything frozen before.",
    )


_DEFAULTS = RowsOptions()


@register
class RowsVariant(AddressVariant):
    name = "rows"
    requires = ("numpy", "numba")
    description = "nogil kernel + each distinct row built once, GC paused: near the list floor."
    Options = RowsOptions

    def __init__(self, db: TokenDatabase, options: Any = None) -> None:
        super().__init__(db, options)
        self._opts: RowsOptions = options if options is not None else _DEFAULTS
        self._tls = threading.local()
        self._size_rows: dict[int, list[int]] = {}
        self._region_blen: list[int] | None = None

    def _blen(self) -> list[int]:
        """block_len expanded to one entry per region (computed once)."""
        if self._region_blen is None:
            self._region_blen = self.db.region_block_len()
        return self._region_blen

    def warm_up(self) -> None:
        compile_kernel()
        super().warm_up()
        self.prepare_value(0, self.db.block_size, [0])

    def _size_row(self, count: int) -> list[int]:
        """The cached size row of a chunk of ``count`` blocks (never handed out itself)."""
        row = self._size_rows.get(count)
        if row is None:
            row = [b * count for b in self._blen()]
            if len(self._size_rows) < _SIZE_CACHE:
                self._size_rows[count] = row
        return row

    def _scratch(self, n: int, regions: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This thread's addrs/bids/counts buffers for ``n`` chunks (reused between requests)."""
        tl = self._tls
        addrs = getattr(tl, "addrs", None)
        if addrs is None or addrs.shape[0] < n:
            cap = 1 << max(6, (n - 1).bit_length())
            addrs = np.empty((cap, regions), dtype=np.int64)
            bids = np.empty(cap, dtype=np.int64)
            counts = np.empty(cap, dtype=np.int64)
            if cap * regions <= _SCRATCH_KEEP:
                tl.addrs, tl.bids, tl.counts = addrs, bids, counts
            return addrs[:n], bids[:n], counts[:n]
        return addrs[:n], tl.bids[:n], tl.counts[:n]

    def prepare_values(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]
    ) -> PreparedValues:
        if not chunks:
            return [], [], []
        opts = self._opts
        paused = opts.pause_gc or opts.promote_young
        if paused:
            pause_gc()
        try:
            out = self._prepare(chunks, block_ids)
            if opts.promote_young:
                promote_young()
            return out
        finally:
            if paused:
                resume_gc()

    @property
    def promotes_young(self) -> bool:
        """Whether each call promotes the process's young objects (``promote_young``)."""
        return self._opts.promote_young

    def _prepare(
        self, chunks: Sequence[tuple[int, int]], block_ids: Sequence[int]
    ) -> PreparedValues:
        ki = kernel_inputs(self)
        db = self.db
        spans = chunk_array(chunks)
        table = table_array(block_ids)
        n = len(spans)
        addrs, bids, counts = self._scratch(n, len(ki.base))
        with gil_free():
            status, c, prefix = call_kernel(db, ki, spans, table, addrs, _NO_SIZES, bids, counts)
        if status != OK:
            raise_status(db, status, c, chunks, block_ids)
        addr_lists = addrs.tolist()
        size_lists = self._build_size_rows(counts, n, prefix, self._opts.share_size_rows)
        return addr_lists, size_lists, bids.tolist()

    def _build_size_rows(
        self, counts: np.ndarray, n: int, prefix: int, share: bool
    ) -> list[list[int]]:
        """One row per chunk; the ``prefix`` chunks with chunk 0's count reuse one row."""
        head = self._size_row(int(counts[0]))
        if share:
            head = head.copy()  # the cached row itself never leaves this object
            out = [head] * prefix
            if prefix < n:
                local: dict[int, list[int]] = {int(counts[0]): head}
                for k in counts[prefix:].tolist():
                    row = local.get(k)
                    if row is None:
                        row = local[k] = self._size_row(k).copy()
                    out.append(row)
            return out
        out = list(map(list.copy, repeat(head, prefix)))
        if prefix < n:
            out.extend(map(list.copy, map(self._size_row, counts[prefix:].tolist())))
        return out

    def prepare_value(
        self, start: int, end: int, block_ids: Sequence[int]
    ) -> tuple[list[int], list[int], int]:
        """One chunk in pure Python: exact Python ints like the reference, so no int64 limit."""
        db = self.db
        db.check_span(start, end)
        bid = operator.index(block_ids[start // db.block_size])
        blen = self._blen()
        addrs = list(
            map(operator.add, db.kv_caches_base_addr, map(operator.mul, blen, repeat(bid)))
        )
        return addrs, self._size_row(cdiv(end - start, db.block_size)).copy(), bid
