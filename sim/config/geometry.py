"""Model geometry: how the KV cache is laid out in memory (docs/design.md §1.1)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, Strict, ValidationInfo, field_validator, model_validator

from sim.config.hf_config import DTYPE_BYTES
from sim.config.model_source import BLOCK_SIZE_MAX, TP_MAX, resolve_model_source
from sim.config.types import FrozenModel, PathText, PosInt

__all__ = ["INT64_MAX", "GeometryConfig"]

INT64_MAX = 2**63 - 1


class GeometryConfig(FrozenModel):
    """Regions, bytes per block and chunking of one model's KV cache."""

    regions: PosInt = Field(
        61,
        le=4096,
        description="KV-cache regions: one per layer for MLA models, two (K and V) per "
        "layer for MHA/GQA models.",
    )
    block_len: tuple[Annotated[int, Strict(), Field(gt=0, le=1 << 30)], ...] = Field(
        (147456,),
        min_length=1,
        max_length=4096,
        description="Bytes per block for each region; region r uses "
        "block_len[r % len(block_len)], so a shorter list repeats.",
    )
    block_size: PosInt = Field(
        128, le=BLOCK_SIZE_MAX, description="Tokens per store chunk (the store's key granularity)."
    )
    hash_block_size: PosInt | None = Field(
        None,
        le=1 << 20,
        description="Tokens per hash block; chunk spans are multiples of it. "
        "Defaults to block_size; must divide block_size.",
    )
    kv_groups: PosInt = Field(
        1,
        le=64,
        description="KV-cache groups (hybrid models have several); each has its "
        "own block table and its own regions.",
    )
    num_blocks: PosInt = Field(
        65536,
        le=1 << 32,
        description="Physical blocks per group; block ids are drawn from [0, num_blocks).",
    )
    base_addr: int = Field(
        0x7F00_0000_0000,
        ge=0,
        le=INT64_MAX,
        description="Address of region 0; regions follow each other without gaps.",
    )
    preset: str | None = Field(
        None,
        description="Built-in model whose KV cache sets regions and block_len "
        "(`kvsim geometry` lists them), e.g. deepseek-v3, llama-3.1-8b.",
    )
    hf_config: PathText | None = Field(
        None,
        description="Path to a Hugging Face config.json (or its directory) that sets regions "
        "and block_len; relative to the config file's directory.",
    )
    tp: PosInt = Field(
        1,
        le=TP_MAX,
        description="Tensor-parallel size: with preset or hf_config, regions and block_len "
        "are those of one rank (GQA heads split over ranks; an MLA latent is not).",
    )
    kv_dtype: str = Field(
        "auto",
        description="KV-cache element type with preset or hf_config: auto (the model's "
        "dtype), bfloat16, float16, float32 or fp8.",
    )

    @model_validator(mode="before")
    @classmethod
    def _resolve_source(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        return resolve_model_source(data, info.context, cls.model_fields["block_size"].default)

    @field_validator("kv_dtype")
    @classmethod
    def _known_dtype(cls, v: str) -> str:
        if v != "auto" and v.lower() not in DTYPE_BYTES:
            raise ValueError(f"unknown dtype; allowed: auto, {', '.join(DTYPE_BYTES)}")
        return v

    @field_validator("block_len")
    @classmethod
    def _block_len_not_longer_than_regions(cls, v: tuple[int, ...], info):
        regions = info.data.get("regions")
        if regions is not None and len(v) > regions:
            raise ValueError(f"has {len(v)} entries but there are only {regions} regions")
        return v

    @model_validator(mode="after")
    def _check_consistency(self) -> GeometryConfig:
        if self.block_size % self.chunk_granularity != 0:
            raise ValueError(
                f"hash_block_size ({self.hash_block_size}) must divide block_size "
                f"({self.block_size})"
            )
        if self.last_address > INT64_MAX:
            raise ValueError(
                f"addresses reach {self.last_address:#x}, past int64; lower base_addr, "
                "num_blocks or block_len"
            )
        return self

    @property
    def chunk_granularity(self) -> int:
        """Tokens a chunk span must be a multiple of."""
        return self.hash_block_size or self.block_size

    def region_block_len(self, region: int) -> int:
        return self.block_len[region % len(self.block_len)]

    @property
    def bytes_per_block(self) -> int:
        """Bytes one chunk of ``block_size`` tokens occupies across all regions of a group."""
        return sum(self.region_block_len(r) for r in range(self.regions))

    def region_bytes(self, region: int) -> int:
        return self.num_blocks * self.region_block_len(region)

    def base_addrs(self, group: int = 0) -> list[int]:
        """Base address of each region of ``group``; groups are laid out one after another."""
        addr = self.base_addr + group * sum(self.region_bytes(r) for r in range(self.regions))
        out = []
        for r in range(self.regions):
            out.append(addr)
            addr += self.region_bytes(r)
        return out

    @property
    def last_address(self) -> int:
        return self.base_addr + self.kv_groups * sum(
            self.region_bytes(r) for r in range(self.regions)
        )
