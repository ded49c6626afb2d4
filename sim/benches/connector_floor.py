"""The floor of ``kvsim bench connectors``: building the list contract's outputs and nothing else.

From int64 values computed beforehand (untimed), one request's outputs: the
address rows by one ``ndarray.tolist()`` (each address is a distinct value, so
each needs a new int), one fresh ``list.copy()`` per chunk of the one size row
per distinct block count (equal rows share their ints), and the block-id list by
``tolist()``; with the GC paused, so that it is pure construction. It leaves
the same GC debt as any variant that builds the same lists with the GC paused.

``promote=True`` ends the pause the way ``rows:promote_young=true`` does
(``gc.freeze(); gc.unfreeze()``), so that a variant using that trick is compared
with a floor that uses it too.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from itertools import repeat
from typing import Any

import numpy as np

__all__ = ["FLOOR", "FLOOR_PROMOTE", "Floor"]

FLOOR = "floor"
FLOOR_PROMOTE = "floor:promote"


class Floor:
    """Building exactly the outputs of one request from precomputed int64 values."""

    def __init__(self, dbs: Sequence[Any], chunks: list[tuple[int, int]], promote: bool) -> None:
        self._np = np
        self._dbs = dbs
        self._chunks = chunks
        self._promote = promote
        spans = np.array([e - s for s, e in chunks], dtype=np.int64)
        block_size = dbs[0].block_size
        self._idx = np.array([s // block_size for s, _e in chunks], dtype=np.int64)
        self._counts = ((spans + block_size - 1) // block_size).tolist()
        self._uniform = len(set(self._counts)) == 1

    def prepare(self, tables: Sequence[Any]) -> list[tuple[Any, dict[int, list[int]], Any]]:
        """Untimed: every group's values as int64 arrays and its size-row prototypes."""
        np = self._np
        prepared = []
        for db, table in zip(self._dbs, tables, strict=True):
            bids = np.asarray(table, dtype=np.int64)[self._idx]
            base = np.asarray(db.kv_caches_base_addr, dtype=np.int64)
            blen = np.asarray(db.region_block_len(), dtype=np.int64)
            addrs = base[None, :] + bids[:, None] * blen[None, :]
            protos = {k: [b * k for b in db.region_block_len()] for k in set(self._counts)}
            prepared.append((addrs, protos, bids))
        return prepared

    def request(self, prepared: list[tuple[Any, dict[int, list[int]], Any]]) -> list[Any]:
        """The timed part: the lists of every group, GC paused (and young promoted)."""
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            out = []
            n = len(self._chunks)
            for addrs, protos, bids in prepared:
                a = addrs.tolist()
                if self._uniform:
                    s = list(map(list.copy, repeat(protos[self._counts[0]], n)))
                else:
                    s = list(map(list.copy, map(protos.__getitem__, self._counts)))
                out.append((a, s, bids.tolist()))
            if self._promote:
                gc.freeze()
                gc.unfreeze()
            return out
        finally:
            if was_enabled:
                gc.enable()
