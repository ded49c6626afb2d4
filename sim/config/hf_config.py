"""Turn a Hugging Face ``config.json`` into the KV-cache layout one tensor-parallel rank holds.

The connector on each TP rank loads that rank's own shard of the cache, so every
figure here is per rank:

- **MLA** (``kv_lora_rank`` and ``qk_rope_head_dim`` set, e.g. DeepSeek-V3): one
  region per layer holding the compressed latent plus the rotary part,
  ``kv_lora_rank + qk_rope_head_dim`` values per token. The latent is not split
  across heads, so every TP rank holds all of it and ``tp`` changes nothing.
- **MHA / GQA**: a K and a V region per layer, each ``kv_heads_per_rank * head_dim``
  values per token, where ``kv_heads_per_rank = num_key_value_heads / tp`` (or 1
  when ``tp`` exceeds the KV heads and each rank keeps a replica of one head).

``block_len`` is the bytes one ``block_size``-token block takes in one region.
Everything that cannot be interpreted raises :class:`HFConfigError` with one line
saying what is missing or unsupported, so the user knows which key to look at.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.errors import HFConfigError
from sim.files.read import read_bounded

__all__ = [
    "DTYPE_BYTES",
    "HFConfigError",
    "KVLayout",
    "kv_layout",
    "read_hf_config",
]

#: Bytes per KV-cache element by the dtype names config.json and users write.
DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}

#: Per-layer kinds that keep an attention KV cache (``layer_types`` / ``layers_block_type``).
_ATTENTION_LAYER_KINDS = {"attention", "full_attention", "sliding_attention", "global", "local"}

MAX_CONFIG_BYTES = 4 << 20


@dataclass(frozen=True)
class KVLayout:
    """The KV cache of one TP rank, as the geometry config needs it."""

    attention: str  # "mla", "gqa" or "mha"
    layers: int
    regions: int
    #: Values (elements) per token in one region.
    values_per_token: int
    dtype: str
    dtype_bytes: int
    tp: int
    #: KV heads this rank holds (None for MLA, whose latent has no heads).
    kv_heads_per_rank: int | None
    head_dim: int | None

    @property
    def region_bytes_per_token(self) -> int:
        return self.values_per_token * self.dtype_bytes

    @property
    def bytes_per_token(self) -> int:
        """Bytes one token takes across all regions of this rank."""
        return self.region_bytes_per_token * self.regions

    def block_len(self, block_size: int) -> int:
        """Bytes one ``block_size``-token block takes in one region."""
        return self.region_bytes_per_token * block_size


def read_hf_config(path: str | Path) -> dict[str, Any]:
    """The parsed ``config.json`` at ``path`` (a file, or a directory holding one)."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "config.json"
    raw = read_bounded(
        p, what="model config.json (model.hf_config)", limit=MAX_CONFIG_BYTES, error=HFConfigError
    )
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise HFConfigError(f"{p}: not a UTF-8 text file") from None
    except json.JSONDecodeError as exc:
        raise HFConfigError(f"{p}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # an integer of 4,300+ digits, deep nesting
        raise HFConfigError(f"{p}: not a usable JSON file ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise HFConfigError(f"{p}: expected a JSON object, got {type(data).__name__}")
    return data


def _int(cfg: Mapping[str, Any], key: str) -> int | None:
    """A positive integer field, None when absent or null."""
    v = cfg.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise HFConfigError(f"{key} must be a positive integer, got {v!r}")
    return v


def _text_part(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """Multimodal configs nest the language model under ``text_config``."""
    if "num_hidden_layers" not in cfg and isinstance(cfg.get("text_config"), Mapping):
        inner = dict(cfg["text_config"])
        for key in ("torch_dtype", "dtype"):
            if inner.get(key) is None and cfg.get(key) is not None:
                inner[key] = cfg[key]
        return inner
    return cfg


def _dtype(cfg: Mapping[str, Any], override: str | None) -> tuple[str, int]:
    name = override if override not in (None, "auto") else None
    if name is None:
        name = cfg.get("torch_dtype") or cfg.get("dtype")
        if name is None:
            raise HFConfigError("has no torch_dtype or dtype; set model.kv_dtype (e.g. bfloat16)")
    key = str(name).removeprefix("torch.").lower()
    if key not in DTYPE_BYTES:
        raise HFConfigError(f"dtype {name!r} is not known; allowed: {', '.join(DTYPE_BYTES)}")
    return key, DTYPE_BYTES[key]


def _check_layers_are_attention(cfg: Mapping[str, Any]) -> None:
    for key in ("layer_types", "layers_block_type"):
        kinds = cfg.get(key)
        if not isinstance(kinds, list):
            continue
        other = sorted({str(k) for k in kinds} - _ATTENTION_LAYER_KINDS)
        if other:
            raise HFConfigError(
                f"{key} has non-attention layers ({', '.join(other)}); kvsim models an "
                "attention KV cache only"
            )


def kv_layout(config: Mapping[str, Any], tp: int = 1, kv_dtype: str | None = None) -> KVLayout:
    """The per-rank KV layout a config.json implies; raises HFConfigError when it cannot."""
    if tp < 1:
        raise HFConfigError(f"tp must be a positive integer, got {tp!r}")
    cfg = _text_part(config)
    layers = _int(cfg, "num_hidden_layers")
    if layers is None:
        kind = cfg.get("model_type", "unknown model_type")
        raise HFConfigError(f"has no num_hidden_layers ({kind}); is this a decoder LM config?")
    _check_layers_are_attention(cfg)
    dtype, nbytes = _dtype(cfg, kv_dtype)
    lora, rope = _int(cfg, "kv_lora_rank"), _int(cfg, "qk_rope_head_dim")
    if lora is not None or rope is not None:
        if lora is None or rope is None:
            raise HFConfigError("MLA needs both kv_lora_rank and qk_rope_head_dim")
        return KVLayout("mla", layers, layers, lora + rope, dtype, nbytes, tp, None, None)
    heads = _int(cfg, "num_attention_heads")
    kv_heads = _int(cfg, "num_key_value_heads") or heads
    if kv_heads is None:
        kind = cfg.get("model_type", "this model")
        raise HFConfigError(
            f"has neither num_key_value_heads nor num_attention_heads ({kind}); kvsim models "
            "an attention KV cache"
        )
    head_dim = _int(cfg, "head_dim")
    if head_dim is None:
        hidden = _int(cfg, "hidden_size")
        if hidden is None or heads is None:
            raise HFConfigError("needs head_dim, or hidden_size and num_attention_heads")
        if hidden % heads:
            raise HFConfigError(
                f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}; "
                "the config must give head_dim"
            )
        head_dim = hidden // heads
    if tp <= kv_heads:
        if kv_heads % tp:
            raise HFConfigError(f"{kv_heads} KV heads cannot be split evenly over tp={tp}")
        per_rank = kv_heads // tp
    else:
        if tp % kv_heads:
            raise HFConfigError(f"tp={tp} is not a multiple of the {kv_heads} KV heads")
        per_rank = 1
    attention = "mha" if heads is None or kv_heads == heads else "gqa"
    return KVLayout(
        attention, layers, 2 * layers, per_rank * head_dim, dtype, nbytes, tp, per_rank, head_dim
    )
