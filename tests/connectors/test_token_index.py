"""Token-to-request index variants: same index as the reference, builds per step, devices."""

from __future__ import annotations

import numpy as np
import pytest

from connectors import registry
from connectors.token_index import MetadataFactory, StepMetadata, reference_index, resolve_device

VARIANTS = ["per_component", "cached", "device"]


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


needs_cuda = pytest.mark.skipif(
    not _cuda(), reason="CUDA is absent: torch.cuda.is_available() is False on this machine"
)


def _variant(name: str, components: int = 3, max_tokens: int = 256, device: str = "cpu"):
    v = registry.get_index_variant(name)(components, max_tokens, device)
    v.warm_up()
    return v


def _as_numpy(t) -> np.ndarray:
    return t.cpu().numpy()


def test_variants_are_registered_with_descriptions() -> None:
    names = registry.index_variant_names()
    assert set(VARIANTS) <= set(names)
    for n in VARIANTS:
        cls = registry.get_index_variant(n)
        assert cls.name == n and cls.description


def test_reference_index_matches_repeat_semantics() -> None:
    qsl = [0, 2, 2, 5]
    assert reference_index(qsl, 7).tolist() == [0, 0, 2, 2, 2, 0, 0]
    assert reference_index([0], 3).tolist() == [0, 0, 0]


@pytest.mark.parametrize("name", VARIANTS)
def test_random_batches_match_reference_on_every_component(name: str) -> None:
    v = _variant(name, components=4, max_tokens=96)
    factory = MetadataFactory(max_reqs=24, max_tokens=96, device="cpu", pad_multiple=8)
    rng = np.random.default_rng(5)
    for _ in range(150):
        lens = rng.integers(0, 5, size=int(rng.integers(0, 24)))
        meta = factory.make(lens)
        want = reference_index(meta.query_start_loc_cpu.numpy(), meta.num_tokens)
        got = v.step(meta)
        assert len(got) == 4
        for g in got:
            np.testing.assert_array_equal(_as_numpy(g), want)


def test_all_variants_agree_with_each_other() -> None:
    variants = [_variant(n, max_tokens=128) for n in VARIANTS]
    factory = MetadataFactory(max_reqs=40, max_tokens=128, device="cpu", pad_multiple=16)
    rng = np.random.default_rng(11)
    for _ in range(50):
        lens = rng.integers(0, 4, size=int(rng.integers(1, 40)))
        outs = []
        for v in variants:
            meta = factory.make(lens)
            outs.append(_as_numpy(v.step(meta)[0]).copy())
        for o in outs[1:]:
            np.testing.assert_array_equal(o, outs[0])


@pytest.mark.parametrize("name", VARIANTS)
def test_padding_is_zeroed_even_over_a_previous_larger_step(name: str) -> None:
    """The buffers persist across steps: stale request ids must not leak into the padding."""
    v = _variant(name, max_tokens=64)
    factory = MetadataFactory(max_reqs=64, max_tokens=64, device="cpu")
    big = factory.make([1] * 60)  # request ids up to 59 in the buffers
    v.step(big)
    meta = factory.make([3, 2], num_tokens=40)  # 5 mapped, 35 padding
    assert (meta.num_mapped, meta.num_tokens) == (5, 40)
    for g in v.step(meta):
        assert _as_numpy(g).tolist() == [0, 0, 0, 1, 1] + [0] * 35


@pytest.mark.parametrize("name", VARIANTS)
def test_more_tokens_than_mapped_with_empty_requests(name: str) -> None:
    v = _variant(name, max_tokens=32)
    factory = MetadataFactory(max_reqs=8, max_tokens=32, device="cpu", pad_multiple=8)
    meta = factory.make([0, 2, 0, 0, 3])  # 5 mapped, padded to 8
    assert meta.num_tokens == 8
    for g in v.step(meta):
        assert _as_numpy(g).tolist() == [1, 1, 4, 4, 4, 0, 0, 0]


def test_cached_builds_once_per_metadata_object_and_shares_the_view() -> None:
    v = _variant("cached", components=5)
    factory = MetadataFactory(max_reqs=8, max_tokens=256, device="cpu")
    meta = factory.make([1, 1, 1])
    views = v.step(meta)
    assert meta.index_builds == 1
    assert all(view is views[0] for view in views)
    v.step(meta)  # asking again for the same step builds nothing
    assert meta.index_builds == 1
    fresh = factory.make([2, 1])  # a new step: a new build, with the new batch
    assert _as_numpy(v.step(fresh)[0]).tolist() == [0, 0, 1]
    assert fresh.index_builds == 1


def test_per_component_builds_k_times_into_separate_buffers() -> None:
    v = _variant("per_component", components=3)
    meta = MetadataFactory(8, 256, "cpu").make([2, 2])
    views = v.step(meta)
    assert meta.index_builds == 3
    assert len({view.data_ptr() for view in views}) == 3


def test_device_builds_once_per_step() -> None:
    v = _variant("device", components=4)
    meta = MetadataFactory(8, 256, "cpu").make([1, 3])
    views = v.step(meta)
    assert meta.index_builds == 1 and all(view is views[0] for view in views)


def test_two_cached_variants_never_share_an_entry() -> None:
    a, b = _variant("cached"), _variant("device")
    meta = MetadataFactory(8, 256, "cpu").make([1, 2])
    assert a.step(meta)[0] is not b.step(meta)[0]
    assert meta.index_builds == 2


def test_bad_token_counts_are_refused() -> None:
    factory = MetadataFactory(max_reqs=4, max_tokens=16, device="cpu")
    with pytest.raises(ValueError, match="num_mapped"):
        factory.make([4, 4], num_tokens=6)
    with pytest.raises(ValueError, match="max_tokens"):
        factory.make([10, 10])
    with pytest.raises(ValueError, match="max_reqs"):
        factory.make([1] * 5)
    with pytest.raises(ValueError, match=">= 0"):
        factory.make([2, -1])
    v = _variant("cached", max_tokens=8)
    big = MetadataFactory(4, 16, "cpu").make([16])
    with pytest.raises(ValueError, match="exceeds max_tokens"):
        v.step(big)
    with pytest.raises(ValueError, match="components"):
        registry.get_index_variant("cached")(0)


def test_construction_is_cheap_and_warm_up_picks_the_device() -> None:
    v = registry.get_index_variant("device")(3, 16, "auto")
    assert v.device == ""  # nothing allocated yet
    v.warm_up()
    assert v.device == ("cuda" if _cuda() else "cpu")


def test_metadata_on_cpu_shares_host_and_device_tensor() -> None:
    meta = MetadataFactory(4, 16, "cpu").make([2, 3])
    assert isinstance(meta, StepMetadata)
    assert meta.query_start_loc is meta.query_start_loc_cpu
    assert meta.query_start_loc_cpu.tolist() == [0, 2, 5]


@pytest.mark.skipif(_cuda(), reason="checks the error raised when CUDA is absent")
def test_cuda_requested_without_cuda_is_a_clear_error() -> None:
    assert resolve_device("auto") == "cpu"
    with pytest.raises(ValueError, match="cuda"):
        resolve_device("cuda")


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("name", VARIANTS)
def test_cuda_variants_match_reference(name: str) -> None:
    v = _variant(name, max_tokens=128, device="cuda")
    factory = MetadataFactory(max_reqs=32, max_tokens=128, device="cuda", pad_multiple=8)
    rng = np.random.default_rng(2)
    for _ in range(50):
        lens = rng.integers(0, 4, size=int(rng.integers(0, 32)))
        meta = factory.make(lens)
        want = reference_index(np.cumsum([0, *lens]), meta.num_tokens)
        views = v.step(meta)
        v.synchronize()
        for g in views:
            assert g.device.type == "cuda"
            np.testing.assert_array_equal(_as_numpy(g), want)


@pytest.mark.cuda
@needs_cuda
def test_cuda_metadata_uses_pinned_staging() -> None:
    meta = MetadataFactory(4, 16, "cuda").make([1, 2])
    assert meta.query_start_loc_cpu.is_pinned()
    assert meta.query_start_loc.device.type == "cuda"
