"""What ``kvsim bench connectors`` is asked to measure: the geometry and the variant specs.

Flags and ``--config`` become one :class:`BenchGeometry` (flags win); each
``--variants`` item becomes a :class:`VariantSpec`. Bad input is a ValueError
naming the field, which the command prints as one line.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from sim.config import GeometryConfig, load_config
from sim.config.workload import FixedTokens
from sim.config.yaml_reader import read_yaml_value

__all__ = [
    "SEED_CHUNKS",
    "BenchGeometry",
    "VariantSpec",
    "bench_geometry",
    "int_list",
    "parse_variant_spec",
]

#: The seed's request: 289K tokens = 2,258 chunks of 128 (docs/design.md §1.1).
SEED_CHUNKS = 2258


@dataclass(frozen=True)
class BenchGeometry:
    """What one bench request looks like."""

    geometry: Any  # sim.config.GeometryConfig
    tokens: int


@dataclass(frozen=True)
class VariantSpec:
    """``NAME`` or ``NAME:key=value:...`` from --variants; ``label`` names its row."""

    label: str
    name: str
    options: dict[str, Any]


def parse_variant_spec(text: str) -> VariantSpec:
    """``rows:share_size_rows=true`` -> VariantSpec; values are read as YAML scalars
    (under a config file's bounds: ConfigError)."""
    name, *pairs = (p.strip() for p in text.strip().split(":"))
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"variant spec {text!r}: expected NAME:key=value, got {pair!r}")
        where = f"variant spec option {key.strip()}"
        options[key.strip()] = read_yaml_value(value, where) if value.strip() else None
    return VariantSpec(text.strip(), name, options)


def int_list(text: str) -> tuple[int, ...]:
    """argparse type: comma-separated positive integers."""
    try:
        out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not out or any(v < 1 for v in out):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return out


def bench_geometry(args: argparse.Namespace) -> BenchGeometry:
    """The geometry from --config and/or flags (flags win); ValueError with the field at fault."""
    raw: dict[str, Any] = {}
    tokens = None
    if args.config is not None:
        cfg = load_config(args.config)
        raw = cfg.model.model_dump(exclude={"preset", "hf_config", "tp", "kv_dtype"})
        if isinstance(cfg.workload.tokens, FixedTokens):
            tokens = cfg.workload.tokens.value
    for flag, key in (
        ("regions", "regions"),
        ("block_size", "block_size"),
        ("block_len", "block_len"),
        ("groups", "kv_groups"),
    ):
        if getattr(args, flag) is not None:
            raw[key] = getattr(args, flag)
    if args.regions is not None and args.block_len is None and "block_len" in raw:
        raw["block_len"] = raw["block_len"][: args.regions]
    try:
        geo = GeometryConfig(**raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "geometry"
        raise ValueError(f"{field}: {err['msg']}") from None
    if args.chunks is not None or tokens is None:
        chunks = SEED_CHUNKS if args.chunks is None else args.chunks
        if chunks < 1:
            raise ValueError(f"--chunks must be >= 1, got {chunks}")
        tokens = chunks * geo.block_size
        try:  # the config's bound on a request's tokens: 10^9 chunks ran out of memory
            FixedTokens(value=tokens)
        except ValidationError as exc:
            msg = exc.errors()[0]["msg"]
            raise ValueError(
                f"--chunks {chunks}: {tokens:,} tokens a request, out of range (the config's "
                f"workload.tokens.fixed.value: {msg})"
            ) from None
    gran = geo.chunk_granularity
    return BenchGeometry(geo, max(gran, tokens - tokens % gran))
