"""Every registered address variant against the scalar reference, on random geometries.

Variants are discovered from the registry, so one registered later is checked
too; those whose class says ``computes_addresses = False`` (synthetic, noop) are
skipped. ``array`` returns NumPy arrays by design and is compared after
conversion; every other variant must return lists of exact Python ints.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pytest

from connectors import registry
from connectors.base import AddressVariant, LoadJob
from connectors.token_database import INT64_MAX, ChunkAlignmentError, TokenDatabase
from sim.config import GeometryConfig
from sim.instruments.gilmeter import measure

REFERENCE = "scalar"
#: Variants that return arrays instead of lists (compared after conversion).
ARRAY_OUTPUT = {"array"}
#: Variants known to compute in int64: they must raise OverflowError past it.
VECTORISED = {"numpy", "numba", "rows", "array"}


def _computing() -> list[str]:
    return [
        n
        for n in registry.address_variant_names()
        if registry.get_address_variant(n).computes_addresses
    ]


VARIANTS = _computing()
_instances: dict[tuple[str, TokenDatabase, str], AddressVariant] = {}


def make(name: str, db: TokenDatabase, options: dict[str, Any] | None = None) -> AddressVariant:
    """A warmed-up instance (cached per geometry, as the simulator builds one per group)."""
    key = (name, db, repr(sorted((options or {}).items())))
    if key not in _instances:
        cls = registry.get_address_variant(name)
        inst = cls(db, cls.validate_options(options or {}))
        inst.warm_up()
        _instances[key] = inst
    return _instances[key]


def as_lists(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return [v if isinstance(v, int) else as_lists(v) for v in x]
    return np.asarray(x).tolist()


def reference(db: TokenDatabase, chunks, table) -> list[list[Any]]:
    out: list[list[Any]] = [[], [], []]
    for s, e in chunks:
        for part, v in zip(out, db.prepare_value(s, e, table), strict=True):
            part.append(v)
    return out


def assert_python_ints(name: str, values: Any) -> None:
    if name in ARRAY_OUTPUT:
        return
    addrs, sizes, bids = values
    assert type(addrs) is list and type(sizes) is list and type(bids) is list
    for rows in (addrs, sizes):
        assert all(type(r) is list for r in rows)
        assert all(type(x) is int for r in rows for x in r)
    assert all(type(b) is int for b in bids)


def random_geometry(rng: np.random.Generator) -> TokenDatabase:
    regions = int(rng.integers(1, 129))
    block_len = tuple(int(x) for x in rng.integers(1, 1 << 20, int(rng.integers(1, regions + 1))))
    hbs = int(rng.choice([1, 2, 4, 16]))
    bases = tuple(int(x) for x in rng.integers(0, 1 << 50, regions))
    return TokenDatabase(bases, block_len, hbs * int(rng.integers(1, 9)), hbs)


def random_request(rng: np.random.Generator, db: TokenDatabase) -> tuple[list, list[int]]:
    """Chunks with random spans (often more than one block) and gaps, and a block table."""
    chunks, start = [], int(rng.integers(0, 3 * db.block_size))
    for _ in range(int(rng.integers(1, 40))):
        span = db.hash_block_size * int(rng.integers(1, 3 * db.block_size // db.hash_block_size))
        chunks.append((start, start + span))
        start += span + db.hash_block_size * int(rng.integers(0, 4))
    n_blocks = start // db.block_size + 1
    table = [int(x) for x in rng.integers(0, 1 << 20, n_blocks)]
    return chunks, table


@pytest.mark.parametrize("name", VARIANTS)
def test_random_geometries_equal_the_reference(name: str) -> None:
    rng = np.random.default_rng(20240531)
    for _ in range(40):
        db = random_geometry(rng)
        chunks, table = random_request(rng, db)
        want = reference(db, chunks, table)
        v = make(name, db)
        got = v.prepare_values(chunks, table)
        assert as_lists(got) == want, f"{name}: geometry {db.regions} regions {db.block_len}"
        assert_python_ints(name, got)
        for i, (s, e) in enumerate(chunks[:5]):
            a, sz, b = v.prepare_value(s, e, table)
            assert [as_lists(a), as_lists(sz), b] == [want[0][i], want[1][i], want[2][i]]
            assert type(b) is int


@pytest.mark.parametrize("name", VARIANTS)
def test_negative_starts_index_from_the_end_like_python(name: str) -> None:
    db = TokenDatabase((0, 100), (4,), 16, 8)
    chunks, table = [(-16, 0), (-8, 8), (-64, -48)], [7, 8, 9, 10]
    assert as_lists(make(name, db).prepare_values(chunks, table)) == reference(db, chunks, table)
    table_view = np.arange(40, dtype=np.int64)[::10]  # a strided array table works too
    got = make(name, db).prepare_values(chunks, table_view)
    assert as_lists(got) == reference(db, chunks, table_view.tolist())


@pytest.mark.parametrize("name", VARIANTS)
def test_no_chunks_gives_three_empty_results(name: str) -> None:
    db = TokenDatabase((0, 100), (4,), 16, 16)
    got = make(name, db).prepare_values([], [1, 2])
    assert [as_lists(x) for x in got] == [[], [], []]
    if name not in ARRAY_OUTPUT:
        assert got == ([], [], [])


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("bad", [(0, 3), (16, 16), (16, 8)])
def test_unaligned_chunk_is_rejected(name: str, bad: tuple[int, int]) -> None:
    db = TokenDatabase((0, 100), (4,), 16, 4)
    v = make(name, db)
    with pytest.raises(ChunkAlignmentError):
        v.prepare_values([(0, 16), bad, (32, 48)], [1, 2, 3])
    with pytest.raises(ChunkAlignmentError):
        v.prepare_value(*bad, [1, 2, 3])


@pytest.mark.parametrize("name", VARIANTS)
def test_block_index_past_the_table_is_an_index_error(name: str) -> None:
    db = TokenDatabase((0, 100), (4,), 16, 16)
    with pytest.raises(IndexError):
        make(name, db).prepare_values([(0, 16), (48, 64)], [1, 2])


@pytest.mark.parametrize("name", VARIANTS)
def test_overflow_is_an_error_never_a_wrapped_address(name: str) -> None:
    """A vectorised variant raises OverflowError past int64; the others stay exact."""
    db = TokenDatabase((0, 2**62), (2**20, 3), 16, 16)
    hi = db.int64_bounds.bid_hi
    assert hi == INT64_MAX // 2**20  # region 0 is the tighter one
    v = make(name, db)
    ok = [(0, 16), (16, 32)]
    assert as_lists(v.prepare_values(ok, [5, hi])) == reference(db, ok, [5, hi])
    for table in ([5, hi + 1], [5, 2**70]):
        try:
            got = v.prepare_values(ok, table)
        except OverflowError as exc:
            assert "int64" in str(exc)
        else:
            assert name not in VECTORISED, f"{name} computed past int64 without an error"
            assert as_lists(got) == reference(db, ok, table)


@pytest.mark.parametrize("name", sorted(VECTORISED & set(VARIANTS)))
def test_vectorised_overflow_cases(name: str) -> None:
    v = make(name, TokenDatabase((0, 2**62), (2**20,), 16, 16))
    hi = v.db.int64_bounds.bid_hi
    with pytest.raises(OverflowError, match="region 1: address"):
        v.prepare_values([(0, 16), (16, 32)], [1, hi + 1])
    with pytest.raises(OverflowError):  # a chunk bound past int64
        v.prepare_values([(2**64, 2**64 + 16)], [1])
    with pytest.raises(OverflowError, match="base address"):
        make(name, TokenDatabase((2**63,), (1,), 16, 16)).prepare_values([(0, 16)], [0])
    big = make(name, TokenDatabase((0,), (2**62,), 16, 16))
    with pytest.raises(OverflowError, match="size"):
        big.prepare_values([(0, 16), (0, 64)], [0])  # 4 blocks x 2**62 bytes


def _job(geo: GeometryConfig, tokens: int, seed: int) -> LoadJob:
    rng = np.random.default_rng(seed)
    hashes = rng.bytes(tokens // geo.chunk_granularity * 32)
    n_chunks = -(-tokens // geo.block_size)
    tables = tuple(
        [int(x) for x in rng.integers(0, geo.num_blocks, n_chunks)] for _ in range(geo.kv_groups)
    )
    return LoadJob(1, tokens, hashes, tables)


@pytest.mark.parametrize("name", VARIANTS)
def test_request_handler_per_chunk_and_per_group_on_several_groups(name: str) -> None:
    """run(): each group its own regions and block table; both handlers give the reference."""
    geo = GeometryConfig(
        regions=7,
        block_len=(4096, 8192, 512),
        block_size=32,
        hash_block_size=8,
        kv_groups=3,
        num_blocks=1000,
    )
    tokens = 32 * 20 + 24  # a partial last chunk
    job = _job(geo, tokens, 11)
    seen_keys = []
    for g in range(geo.kv_groups):
        db = TokenDatabase.from_geometry(geo, g)
        keyed = db.chunk_list(tokens, job.block_hashes, job.hash_len)
        want = reference(db, [(s, e) for s, e, _ in keyed], job.block_ids[g])
        v = make(name, db)
        for handler in ("per_chunk", "per_group"):
            keys, values = v.run(job, g, handler)
            assert keys == [k for *_, k in keyed]
            assert as_lists(values) == want, f"{name} {handler} group {g}"
            if handler == "per_group":
                assert_python_ints(name, values)
        seen_keys.append(keys)
    assert len({k[0] for k in seen_keys}) == geo.kv_groups  # keys are per group


@pytest.mark.parametrize("name", sorted({"numba", "rows", "array"} & set(VARIANTS)))
def test_kernel_time_is_declared_gil_free(name: str) -> None:
    from connectors.address_numba import kernel

    db = TokenDatabase(tuple(range(0, 64 << 30, 1 << 30)), (1 << 16,), 16, 16)
    v = make(name, db)
    assert kernel().signatures, "warm_up must compile the kernel"
    chunks = [(i * 16, i * 16 + 16) for i in range(3000)]
    _res, err, timing = measure(v.prepare_values, chunks, list(range(3000)))
    assert err is None
    assert 0 < timing.free_cpu_ns < timing.cpu_ns


def test_rows_options_and_shared_size_rows() -> None:
    db = TokenDatabase((0, 1000, 2000), (10,), 16, 4)
    chunks, table = [(0, 16), (16, 32), (32, 64), (64, 72)], [1, 2, 3, 4, 5]
    want = reference(db, chunks, table)
    shared = make("rows", db, {"share_size_rows": True})
    a, sizes, b = shared.prepare_values(chunks, table)
    assert [a, sizes, b] == want
    assert sizes[0] is sizes[1] is sizes[3] and sizes[2] is not sizes[0]
    sizes[0].append(-1)  # a consumer mutating a shared row must not reach the next call
    assert shared.prepare_values(chunks, table)[1] == want[1]
    fresh = make("rows", db)
    _, sizes, _ = fresh.prepare_values(chunks, table)
    assert sizes[0] == sizes[1] and sizes[0] is not sizes[1]
    sizes[0].append(-1)
    assert fresh.prepare_values(chunks, table)[1] == want[1]
    assert make("rows", db, {"pause_gc": False}).prepare_values(chunks, table) == tuple(want)


def test_bad_options_are_rejected_with_the_field() -> None:
    rows = registry.get_address_variant("rows")
    with pytest.raises(ValueError, match="bogus"):
        rows.validate_options({"bogus": 1})
    with pytest.raises(ValueError, match="pause_gc"):
        rows.validate_options({"pause_gc": "yes"})
    with pytest.raises(ValueError, match="takes no options"):
        registry.get_address_variant("numba").validate_options({"x": 1})


@pytest.mark.parametrize("enabled", [True, False])
def test_rows_restores_the_gc_state_even_on_error(enabled: bool) -> None:
    db = TokenDatabase((0, 1000), (10,), 16, 16)
    v = make("rows", db)
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        v.prepare_values([(0, 16)], [1])
        assert gc.isenabled() is enabled
        with pytest.raises(ChunkAlignmentError):
            v.prepare_values([(0, 3)], [1])
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


@pytest.mark.realthreads
def test_rows_gc_pause_from_many_threads_ends_enabled() -> None:
    db = TokenDatabase(tuple(range(0, 61 << 30, 1 << 30)), (1 << 16,), 16, 16)
    v = make("rows", db)
    chunks = [(i * 16, i * 16 + 16) for i in range(500)]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                v.prepare_values(chunks, list(range(500)))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    assert gc.isenabled()
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert gc.isenabled()


def test_listing_variants_does_not_import_numba() -> None:
    code = (
        "import sys; from connectors import registry; registry.address_variant_names(); "
        "print('numba' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_array_takes_int64_buffers_natively_and_equals_the_reference() -> None:
    """buffer_inputs: an (n, 2) int64 chunk array and an int64 table give scalar's addresses."""
    assert registry.get_address_variant("array").buffer_inputs
    assert not registry.get_address_variant("scalar").buffer_inputs
    rng = np.random.default_rng(7)
    for _ in range(20):
        db = random_geometry(rng)
        chunks, table = random_request(rng, db)
        v = make("array", db)
        spans, tab = np.asarray(chunks, dtype=np.int64), np.asarray(table, dtype=np.int64)
        assert as_lists(v.prepare_values(spans, tab)) == reference(db, chunks, table)
        got = v.addresses(spans, tab, "per_chunk")
        assert as_lists(got) == reference(db, chunks, table)
    v = make("array", TokenDatabase((0, 100), (4,), 16, 4))
    with pytest.raises(ChunkAlignmentError, match=r"\(16, 19\)"):
        v.prepare_values(np.array([[0, 16], [16, 19]], dtype=np.int64), np.arange(4))
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        v.prepare_values(np.zeros((2, 3), dtype=np.int64), np.arange(4))
    with pytest.raises(TypeError, match="int64"):
        v.prepare_values(np.zeros((2, 2), dtype=np.float64), np.arange(4))


def test_rows_promote_young_equals_the_reference_and_leaves_nothing_young() -> None:
    db = TokenDatabase(tuple(range(0, 61 << 30, 1 << 30)), (1 << 16,), 16, 16)
    v = make("rows", db, {"promote_young": True})
    assert v.promotes_young and not make("rows", db).promotes_young
    chunks = [(i * 16, i * 16 + 16) for i in range(300)]
    table = list(range(300))
    assert v.prepare_values(chunks, table) == tuple(reference(db, chunks, table))
    gc.collect()
    was = gc.get_freeze_count()
    result = v.prepare_values(chunks, table)
    assert gc.get_count()[0] < 50  # the 600 new lists are no longer young
    assert gc.isenabled() and gc.get_freeze_count() == 0 == was
    del result
