"""Named model geometries: the config.json fields of well-known models that shape the KV cache.

A preset is just the subset of a Hugging Face ``config.json`` that
:func:`sim.config.hf_config.kv_layout` reads, so a preset and the model's own file
resolve through one code path and cannot disagree. Figures are those of the
published model configs.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["PRESETS", "Preset", "get_preset"]


@dataclass(frozen=True)
class Preset:
    name: str
    hf_id: str
    summary: str
    config: Mapping[str, Any]


def _preset(name: str, hf_id: str, summary: str, **config: Any) -> Preset:
    return Preset(name, hf_id, summary, MappingProxyType(config))


PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        p.name: p
        for p in (
            _preset(
                "deepseek-v3",
                "deepseek-ai/DeepSeek-V3",
                "61 MLA layers, latent 512 + rope 64, bf16",
                model_type="deepseek_v3",
                num_hidden_layers=61,
                hidden_size=7168,
                num_attention_heads=128,
                num_key_value_heads=128,
                kv_lora_rank=512,
                qk_rope_head_dim=64,
                torch_dtype="bfloat16",
            ),
            _preset(
                "llama-3.1-8b",
                "meta-llama/Llama-3.1-8B",
                "32 layers, GQA 8 KV heads x 128, bf16",
                model_type="llama",
                num_hidden_layers=32,
                hidden_size=4096,
                num_attention_heads=32,
                num_key_value_heads=8,
                head_dim=128,
                torch_dtype="bfloat16",
            ),
            _preset(
                "llama-3.1-70b",
                "meta-llama/Llama-3.1-70B",
                "80 layers, GQA 8 KV heads x 128, bf16",
                model_type="llama",
                num_hidden_layers=80,
                hidden_size=8192,
                num_attention_heads=64,
                num_key_value_heads=8,
                head_dim=128,
                torch_dtype="bfloat16",
            ),
            _preset(
                "qwen2.5-7b",
                "Qwen/Qwen2.5-7B-Instruct",
                "28 layers, GQA 4 KV heads x 128, bf16",
                model_type="qwen2",
                num_hidden_layers=28,
                hidden_size=3584,
                num_attention_heads=28,
                num_key_value_heads=4,
                torch_dtype="bfloat16",
            ),
            _preset(
                "qwen3-32b",
                "Qwen/Qwen3-32B",
                "64 layers, GQA 8 KV heads x 128 (head_dim != hidden/heads), bf16",
                model_type="qwen3",
                num_hidden_layers=64,
                hidden_size=5120,
                num_attention_heads=64,
                num_key_value_heads=8,
                head_dim=128,
                torch_dtype="bfloat16",
            ),
        )
    }
)


def get_preset(name: str) -> Preset:
    """The preset called ``name``; a ValueError with a did-you-mean when there is none."""
    try:
        return PRESETS[name.lower()]
    except KeyError:
        close = difflib.get_close_matches(name.lower(), list(PRESETS), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ValueError(f"unknown preset {name!r}; {hint}allowed: {', '.join(PRESETS)}") from None
