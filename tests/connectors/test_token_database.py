"""TokenDatabase: the scalar reference, chunking and store keys, and the int64 limits."""

from __future__ import annotations

import pytest

from connectors.token_database import (
    INT64_MAX,
    INT64_MIN,
    ChunkAlignmentError,
    TokenDatabase,
    cdiv,
)
from sim.config import GeometryConfig


def _db(**kw) -> TokenDatabase:
    args = {
        "kv_caches_base_addr": (1000, 5000, 9000, 13000, 17000),
        "block_len": (10, 20),
        "block_size": 16,
        "hash_block_size": 4,
    }
    args.update(kw)
    return TokenDatabase(**args)


def test_cdiv_rounds_up() -> None:
    assert [cdiv(a, 4) for a in (1, 4, 5, 8, 9)] == [1, 1, 2, 2, 3]


def test_block_len_shorter_than_regions_repeats() -> None:
    db = _db()
    assert db.region_block_len() == [10, 20, 10, 20, 10]
    addrs, sizes, bid = db.prepare_value(32, 48, [7, 8, 3, 9])
    assert bid == 3  # chunk index 32 // 16 = 2
    assert addrs == [1000 + 30, 5000 + 60, 9000 + 30, 13000 + 60, 17000 + 30]
    assert sizes == [10, 20, 10, 20, 10]


def test_sizes_count_blocks_rounded_up() -> None:
    db = _db()
    # 20 tokens of 16-token blocks -> 2 blocks; 4 tokens -> 1 block.
    assert db.prepare_value(0, 20, [0])[1] == [20, 40, 20, 40, 20]
    assert db.prepare_value(4, 8, [5])[1] == [10, 20, 10, 20, 10]
    assert all(type(x) is int for x in db.prepare_value(0, 20, [0])[0])


@pytest.mark.parametrize("span", [(0, 3), (0, 0), (8, 4), (0, 17)])
def test_unaligned_or_empty_span_is_rejected(span: tuple[int, int]) -> None:
    with pytest.raises(ChunkAlignmentError, match="hash_block_size 4"):
        _db().prepare_value(*span, [0, 0])
    assert issubclass(ChunkAlignmentError, ValueError)


def test_construction_errors() -> None:
    with pytest.raises(ValueError, match="multiple of hash_block_size"):
        _db(block_size=10, hash_block_size=4)
    with pytest.raises(ValueError, match="block_len must not be empty"):
        _db(block_len=())


def test_chunk_spans_and_keys() -> None:
    db = _db(key_prefix="p")
    assert list(db.chunk_spans(40)) == [(0, 16), (16, 32), (32, 40)]
    hashes = bytes(range(10)) * 2  # ten 2-byte hashes, one per 4 tokens
    keyed = db.chunk_list(40, hashes, hash_len=2)
    assert [(s, e) for s, e, _ in keyed] == [(0, 16), (16, 32), (32, 40)]
    # A chunk's key is the hex of the last hash it covers: hashes 3, 7 and 9.
    assert [k for *_, k in keyed] == [f"p@{hashes[i * 2 : i * 2 + 2].hex()}" for i in (3, 7, 9)]


def test_chunk_list_errors() -> None:
    db = _db()
    with pytest.raises(ChunkAlignmentError, match="token_len 6"):
        db.chunk_list(6, bytes(64))
    with pytest.raises(ValueError, match="cannot cover 40 tokens"):
        db.chunk_list(40, bytes(32 * 9))


def test_from_geometry_gives_each_group_its_own_regions() -> None:
    geo = GeometryConfig(regions=3, block_len=(64,), block_size=8, kv_groups=2, num_blocks=4)
    g0, g1 = (TokenDatabase.from_geometry(geo, g) for g in range(2))
    assert g0.kv_caches_base_addr == tuple(geo.base_addrs(0))
    assert g1.kv_caches_base_addr[0] == g0.kv_caches_base_addr[-1] + 4 * 64
    assert g0.key_prefix != g1.key_prefix
    assert g0.hash_block_size == geo.chunk_granularity == 8


@pytest.mark.parametrize(
    ("bases", "block_len"),
    [
        ((0, 2**62, 12345), (2**20, 3, 7)),
        ((10, 2**40), (-3,)),
        ((-(2**61), 5), (2**33, 0)),
        ((INT64_MAX, INT64_MIN), (1,)),
    ],
)
def test_int64_bounds_are_exact(bases: tuple[int, ...], block_len: tuple[int, ...]) -> None:
    """Inside the bounds every address/size fits int64; one step outside, one does not."""
    db = TokenDatabase(bases, block_len, 16, 16)
    b = db.int64_bounds
    blen = db.region_block_len()

    def fits(bid: int, count: int = 1) -> bool:
        vals = [a + bid * x for a, x in zip(bases, blen, strict=True)]
        vals += [x * count for x in blen]
        return all(INT64_MIN <= v <= INT64_MAX for v in vals)

    assert b.bid_lo <= b.bid_hi
    assert fits(b.bid_lo) and fits(b.bid_hi)
    assert not fits(b.bid_hi + 1) or b.bid_hi == INT64_MAX
    assert not fits(b.bid_lo - 1) or b.bid_lo == INT64_MIN
    assert fits(b.bid_lo, b.count_hi)
    assert not fits(b.bid_lo, b.count_hi + 1) or b.count_hi == INT64_MAX


def test_int64_bounds_reject_base_past_int64() -> None:
    with pytest.raises(OverflowError, match="region 1: base address"):
        TokenDatabase((0, 2**63), (1,), 16, 16).int64_bounds  # noqa: B018


def test_overflow_error_names_chunk_region_and_value() -> None:
    db = TokenDatabase((0, 2**62), (2**20,), 16, 16)
    err = db.overflow_error((32, 48), 2**42)
    assert isinstance(err, OverflowError)
    assert "chunk (32, 48), region 1: address" in str(err) and "int64" in str(err)
