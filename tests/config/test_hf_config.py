"""HF config.json import: per-rank KV layouts, and one-line errors for what it cannot read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.config.hf_config import HFConfigError, kv_layout, read_hf_config

DATA = Path(__file__).resolve().parents[1] / "data"


def _layout(name: str, **kw):
    return kv_layout(read_hf_config(DATA / name), **kw)


def test_llama_gqa_has_k_and_v_regions_split_over_tp() -> None:
    one = _layout("hf_llama_3_1_8b.json")
    assert (one.attention, one.layers, one.regions) == ("gqa", 32, 64)
    assert (one.kv_heads_per_rank, one.head_dim, one.dtype_bytes) == (8, 128, 2)
    # 32 layers x (K + V) x 8 heads x 128 x 2 bytes = 128 KiB per token.
    assert one.bytes_per_token == 32 * 2 * 8 * 128 * 2
    assert one.block_len(128) == 128 * 8 * 128 * 2
    two = _layout("hf_llama_3_1_8b.json", tp=2)
    assert two.kv_heads_per_rank == 4 and two.bytes_per_token * 2 == one.bytes_per_token
    # More ranks than KV heads: each rank keeps a replica of one head.
    sixteen = _layout("hf_llama_3_1_8b.json", tp=16)
    assert sixteen.kv_heads_per_rank == 1 and sixteen.regions == 64


def test_mla_is_one_region_per_layer_and_ignores_tp() -> None:
    lay = _layout("hf_deepseek_v3.json")
    assert (lay.attention, lay.regions, lay.values_per_token) == ("mla", 61, 512 + 64)
    assert lay.block_len(128) == 147456  # the default geometry's figure
    assert _layout("hf_deepseek_v3.json", tp=8).block_len(128) == lay.block_len(128)


def test_head_dim_falls_back_to_hidden_over_heads() -> None:
    lay = _layout("hf_qwen2_5_7b.json")
    assert lay.head_dim == 3584 // 28 == 128
    assert (lay.regions, lay.kv_heads_per_rank) == (56, 4)


def test_explicit_head_dim_wins_over_hidden_over_heads() -> None:
    cfg = {
        "num_hidden_layers": 2,
        "hidden_size": 5120,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "torch_dtype": "bfloat16",
    }
    assert kv_layout(cfg).head_dim == 128  # 5120 / 64 would be 80


def test_text_config_of_a_multimodal_model_and_outer_dtype() -> None:
    lay = _layout("hf_multimodal.json")
    assert (lay.layers, lay.head_dim, lay.kv_heads_per_rank) == (34, 256, 4)
    assert lay.dtype == "float16"


def test_mha_without_kv_heads_uses_attention_heads() -> None:
    cfg = {
        "num_hidden_layers": 4,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "torch_dtype": "float32",
    }
    lay = kv_layout(cfg)
    assert (lay.attention, lay.kv_heads_per_rank, lay.head_dim, lay.dtype_bytes) == (
        "mha",
        4,
        64,
        4,
    )


@pytest.mark.parametrize(
    ("override", "nbytes"), [("fp8", 1), ("float32", 4), ("auto", 2), ("torch.float16", 2)]
)
def test_kv_dtype_override(override: str, nbytes: int) -> None:
    assert _layout("hf_llama_3_1_8b.json", kv_dtype=override).dtype_bytes == nbytes


def test_directory_holding_config_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((DATA / "hf_qwen2_5_7b.json").read_text())
    assert kv_layout(read_hf_config(tmp_path)).layers == 28


@pytest.mark.parametrize(
    ("cfg", "needle"),
    [
        ({"model_type": "bert"}, "has no num_hidden_layers (bert)"),
        (
            {"num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 8},
            "has no torch_dtype or dtype",
        ),
        (
            {
                "num_hidden_layers": 2,
                "num_attention_heads": 3,
                "hidden_size": 8,
                "torch_dtype": "bfloat16",
            },
            "hidden_size 8 is not a multiple",
        ),
        (
            {"num_hidden_layers": 2, "kv_lora_rank": 512, "torch_dtype": "bfloat16"},
            "needs both kv_lora_rank and qk_rope_head_dim",
        ),
        (
            {
                "num_hidden_layers": 2,
                "num_attention_heads": 2,
                "head_dim": 8,
                "torch_dtype": "int3",
            },
            "dtype 'int3' is not known",
        ),
        ({"num_hidden_layers": "32", "torch_dtype": "bfloat16"}, "num_hidden_layers must be"),
        (
            {
                "num_hidden_layers": 2,
                "layers_block_type": ["attention", "mamba"],
                "num_attention_heads": 2,
                "head_dim": 8,
                "torch_dtype": "bfloat16",
            },
            "non-attention layers (mamba)",
        ),
    ],
)
def test_uninterpretable_configs_say_why(cfg: dict, needle: str) -> None:
    with pytest.raises(HFConfigError) as info:
        kv_layout(cfg)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_tp_that_does_not_divide_the_heads() -> None:
    with pytest.raises(HFConfigError, match="8 KV heads cannot be split evenly over tp=3"):
        _layout("hf_llama_3_1_8b.json", tp=3)
    with pytest.raises(HFConfigError, match="tp=12 is not a multiple of the 8 KV heads"):
        _layout("hf_llama_3_1_8b.json", tp=12)


def test_state_space_model_is_refused() -> None:
    with pytest.raises(HFConfigError, match=r"\(mamba\); kvsim models an attention KV cache"):
        _layout("hf_mamba.json")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(HFConfigError, match="no such file"):
        read_hf_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "num_hidden_layers": 2,\n  oops\n}')
    with pytest.raises(HFConfigError, match=r"bad.json:3: not valid JSON"):
        read_hf_config(bad)
    bad.write_text(json.dumps([1, 2]))
    with pytest.raises(HFConfigError, match="expected a JSON object, got list"):
        read_hf_config(bad)
