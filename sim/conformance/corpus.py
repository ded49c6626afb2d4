"""The fixed corpus ``kvsim check`` runs a variant on: geometries × requests × handlers.

Chosen to reach the places a re-implementation of ``prepare_values`` gets wrong
(docs/your-connector.md): MLA (one region per layer) and MHA (K and V per layer)
layouts, a ``block_len`` list shorter than the regions (it repeats) and one whose
length does not divide them, several KV-cache groups (other base addresses, other
block tables), a last chunk shorter than ``block_size``, a one-chunk and an empty
request, and block ids whose addresses land just below ``INT64_MAX`` (where int64
arithmetic would wrap). Every request runs through both handlers: ``per_chunk``
(one ``prepare_value`` per chunk) and ``per_group`` (one ``prepare_values``).

The corpus is the same on every run (its block tables come from a fixed seed), so
a failure is reproducible by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from connectors.token_database import INT64_MAX, TokenDatabase

__all__ = ["CASE_SEED", "LONG_CHUNKS", "MAX_RUN_CHUNKS", "Case", "Geometry", "corpus", "geometries"]

#: Seed of the corpus's block tables (fixed: a case is reproducible by its name).
CASE_SEED = 27

#: Chunks of the corpus's long request: past the sizes where a variant might switch
#: to another path (a vectorised one for long requests) and be checked only on the short.
LONG_CHUNKS = 300

#: The longest request of a run's own geometry that the check before a run compares in
#: full (a longer run is covered by the run's per-request check of the result's types,
#: connectors.contract); at 61 regions the reference takes ~60 ms for it.
MAX_RUN_CHUNKS = 8192


@dataclass(frozen=True)
class Geometry:
    """One KV-cache group's layout, named for messages."""

    name: str
    db: TokenDatabase


@dataclass(frozen=True)
class Case:
    """One call of the variant: a request's chunks and block table, through one handler."""

    geometry: Geometry
    #: What the request is, for messages ("3 chunks, last partial").
    request: str
    chunks: tuple[tuple[int, int], ...]
    block_ids: tuple[int, ...]
    handler: str

    @property
    def label(self) -> str:
        return f"{self.geometry.name}, {self.request}, {self.handler}"


def _db(bases: list[int], block_len: tuple[int, ...], block_size: int, hash_bs: int, group: int):
    return TokenDatabase(
        kv_caches_base_addr=tuple(bases),
        block_len=block_len,
        block_size=block_size,
        hash_block_size=hash_bs,
        key_prefix=f"check@group:{group}",
    )


def _layout(base: int, regions: int, block_len: tuple[int, ...], blocks: int) -> list[int]:
    """Regions laid out one after another from ``base``, ``blocks`` blocks each."""
    out, addr = [], base
    for r in range(regions):
        out.append(addr)
        addr += block_len[r % len(block_len)] * blocks
    return out


def geometries() -> list[Geometry]:
    """The layouts of the corpus (two groups where the layout has groups)."""
    mla_len = (147456,)  # DeepSeek-like MLA: 576 x 2 bytes x 128 tokens, one region per layer
    mha_len = (8192, 8192)  # K and V of a layer, each region its own
    mixed = (4096, 1024, 2048)  # three lengths over 7 regions: the list repeats unevenly
    out = [
        Geometry(
            "mla 5 regions", _db(_layout(0x7F00_0000_0000, 5, mla_len, 512), mla_len, 128, 16, 0)
        ),
    ]
    for g in range(2):
        base = 0x5000_0000_0000 + g * 0x1_0000_0000
        out.append(
            Geometry(
                f"mha 8 regions group {g}", _db(_layout(base, 8, mha_len, 256), mha_len, 16, 16, g)
            )
        )
    for g in range(2):
        base = 0x6000_0000_0000 + g * 0x4000_0000
        out.append(
            Geometry(
                f"mixed block_len 7 regions group {g}",
                _db(_layout(base, 7, mixed, 256), mixed, 64, 16, g),
            )
        )
    # Bases high enough that the largest block id's address is just below INT64_MAX.
    big = (1 << 20,)
    top = INT64_MAX - (1 << 40)
    out.append(Geometry("near int64 max", _db([top - 3 * (1 << 20), top], big, 32, 16, 0)))
    return out


def _requests(db: TokenDatabase, rng: np.random.Generator) -> list[tuple[str, list[int], int]]:
    """(description, block table, tokens) of each request of one geometry."""
    bs, hb = db.block_size, db.hash_block_size
    hi = db.int64_bounds.bid_hi
    top = min(hi, 2**40)
    reqs = []
    for desc, chunks, partial in (
        ("empty request", 0, False),
        ("one chunk", 1, False),
        ("one partial chunk", 1, True),
        ("5 chunks", 5, False),
        ("9 chunks, last partial", 9, True),
        (f"{LONG_CHUNKS} chunks, last partial", LONG_CHUNKS, True),
    ):
        if partial and bs == hb:
            if chunks != LONG_CHUNKS:
                continue  # a chunk of one hash block cannot be partial
            partial, desc = False, f"{LONG_CHUNKS} chunks"
        tokens = chunks * bs - (bs - hb if partial else 0)
        blocks = max(chunks, 1)
        ids = rng.integers(0, min(top, 1 << 31), size=blocks).tolist()
        reqs.append((desc, [int(i) for i in ids], tokens))
    # The extremes: block 0 and the largest id whose address still fits in int64.
    ids = [0, hi, hi - 1, 1] if hi < 2**62 else [0, 2**40, 1, 2**40 - 1]
    reqs.append(("block ids at the int64 edge", ids, len(ids) * bs))
    return reqs


def corpus() -> list[Case]:
    """Every case, in a fixed order."""
    rng = np.random.Generator(np.random.PCG64(CASE_SEED))
    out = []
    for geo in geometries():
        for desc, ids, tokens in _requests(geo.db, rng):
            chunks = tuple(geo.db.chunk_spans(tokens))
            # A long request through per_chunk is only more one-chunk calls: per_group only.
            long = len(chunks) >= LONG_CHUNKS
            for handler in ("per_group",) if long else ("per_group", "per_chunk"):
                out.append(Case(geo, desc, chunks, tuple(ids), handler))
    return out


def run_cases(model: Any, tokens: int, handler: str) -> list[Case]:
    """Cases on a run's own geometry (``model``: a sim.config.GeometryConfig) up to its
    longest request (``tokens``), through the run's ``handler``: requests of 16, 32, 64, …
    chunks and the longest itself (at most :data:`MAX_RUN_CHUNKS`), in every KV-cache
    group, so that what the run will call is what was compared with the reference."""
    rng = np.random.Generator(np.random.PCG64(CASE_SEED))
    out = []
    for g in range(model.kv_groups):
        db = TokenDatabase.from_geometry(model, g)
        blen = "/".join(str(n) for n in db.block_len[:4]) + ("/…" if len(db.block_len) > 4 else "")
        geo = Geometry(
            f"the run's geometry ({db.regions} regions, block_len {blen}, "
            f"block_size {db.block_size}, group {g})",
            db,
        )
        longest = min(max(tokens, 1), MAX_RUN_CHUNKS * db.block_size)
        steps = (16, 64, 256, 1024, 4096)
        sizes = [n * db.block_size for n in steps if n * db.block_size < longest]
        for size in [*sizes, longest]:
            chunks = tuple(db.chunk_spans(size - size % db.hash_block_size or db.hash_block_size))
            ids = rng.integers(0, model.num_blocks, size=max(1, len(chunks))).tolist()
            desc = f"{len(chunks)} chunks ({size} tokens)"
            out.append(Case(geo, desc, chunks, tuple(int(i) for i in ids), handler))
    return out
