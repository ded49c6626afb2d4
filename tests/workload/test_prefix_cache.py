"""The store's memory of stored blocks: prefix lookups, capacity, LRU and FIFO eviction."""

from __future__ import annotations

import pytest

from sim.workload.prefix_cache import PrefixCache


def test_only_a_leading_run_of_stored_blocks_hits() -> None:
    c = PrefixCache()
    assert c.access([1, 2, 3]) == 0
    assert c.match_prefix([1, 2, 3, 4]) == 3
    assert c.match_prefix([1, 9, 3]) == 1  # 3 is stored, but not after a miss
    assert c.match_prefix([9, 1, 2]) == 0
    assert c.access([1, 2, 7]) == 2 and 7 in c and len(c) == 4


def test_match_prefix_changes_nothing() -> None:
    c = PrefixCache(capacity=2)
    c.store([1])
    c.store([2])
    assert c.match_prefix([1, 2]) == 2
    c.store([3])  # under LRU the lookup above did not refresh 1, so 1 goes
    assert 1 not in c and 2 in c and c.evictions == 1


def test_lru_keeps_recently_used_blocks() -> None:
    c = PrefixCache(capacity=3, policy="lru")
    c.store([1])
    c.store([2])
    c.store([3])
    assert c.access([1]) == 1  # 1 becomes the most recent
    c.store([4])
    assert 2 not in c and all(b in c for b in (1, 3, 4))


def test_fifo_evicts_the_oldest_stored_even_when_used() -> None:
    c = PrefixCache(capacity=3, policy="fifo")
    for b in (1, 2, 3):
        c.store([b])
    assert c.access([1]) == 1
    c.store([4])
    assert 1 not in c and all(b in c for b in (2, 3, 4))


def test_a_requests_head_outlives_its_tail() -> None:
    """Blocks are stored last-to-first, so the shared head is evicted last."""
    for policy in ("lru", "fifo"):
        c = PrefixCache(capacity=4, policy=policy)  # type: ignore[arg-type]
        c.store([10, 11, 12, 13])
        c.store([20, 21])
        assert 10 in c and 11 in c and 12 not in c and 13 not in c
        assert c.match_prefix([10, 11, 12]) == 2


def test_capacity_is_never_exceeded_and_evictions_are_counted() -> None:
    c = PrefixCache(capacity=5)
    for start in range(0, 100, 7):
        c.access(list(range(start, start + 7)))
        assert len(c) <= 5
    assert c.evictions == 15 * 7 - 5


def test_unbounded_keeps_everything() -> None:
    c = PrefixCache()
    c.store(range(1000))  # type: ignore[arg-type]
    assert len(c) == 1000 and c.evictions == 0 and c.capacity is None


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least one block"):
        PrefixCache(capacity=0)
    with pytest.raises(ValueError, match="allowed: lru, fifo"):
        PrefixCache(policy="lfu")  # type: ignore[arg-type]
