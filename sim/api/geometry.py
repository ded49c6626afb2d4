"""``kvsim geometry``'s workflow: the KV layout a model preset or a config.json resolves to.

The per-rank layout (regions, block_len, bytes per token and per chunk) and the
``model:`` section to paste into an experiment, so the numbers can be checked against
what one knows of the model before running anything; without a model, the presets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from sim.api.cli_args import FromCliArgs
from sim.config import ConfigError, GeometryConfig
from sim.config.model_source import layout_for
from sim.config.presets import PRESETS, get_preset
from sim.errors import UsageError

__all__ = ["GeometryArgs", "geometry"]

_REFERENCE_TOKENS = 131072


@dataclass(frozen=True)
class GeometryArgs(FromCliArgs):
    """What ``kvsim geometry`` was asked: a preset or config.json (None: list the presets),
    the tensor-parallel size, tokens per store chunk and the KV element type."""

    model: str | None
    tp: int = 1
    block_size: int = 128
    kv_dtype: str = "auto"


def geometry(args: GeometryArgs) -> list[str]:
    """The lines that describe ``args.model``'s layout, or list the presets; one-line
    UsageError/ConfigError for a size below 1 or a model that is neither."""
    if args.model is None:
        return _preset_list()
    for flag, value in (("--tp", args.tp), ("--block-size", args.block_size)):
        if value < 1:
            raise UsageError(f"{flag}: must be a positive integer (got {value})")
    return _lines(args.model, args.tp, args.block_size, args.kv_dtype)


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.0f} B"


def _lines(model: str, tp: int, block_size: int, kv_dtype: str) -> list[str]:
    is_preset = model.lower() in PRESETS
    path = Path(model).expanduser()
    if not is_preset and not path.exists():
        try:
            get_preset(model)
        except ValueError as exc:
            raise ConfigError(f"{model}: neither a file nor a preset; {exc}") from None
    key = "preset" if is_preset else "hf_config"
    source_value = model.lower() if is_preset else str(path.resolve())
    try:
        _source, layout = layout_for(
            source_value if is_preset else None,
            None if is_preset else source_value,
            tp,
            kv_dtype,
        )
        geo = GeometryConfig.model_validate(
            {key: source_value, "tp": tp, "block_size": block_size, "kv_dtype": kv_dtype}
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].replace("Value error, ", "")
        raise ConfigError(f"{model}: {where + ': ' if where else ''}{msg}") from None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    title = f"{model.lower()} ({PRESETS[model.lower()].hf_id})" if is_preset else source_value
    if layout.attention == "mla":
        shape = (
            f"MLA: {layout.layers} layers, latent+rope {layout.values_per_token} values per "
            "token, same on every TP rank"
        )
        regions = f"{geo.regions} (one per layer)"
    else:
        shape = (
            f"{layout.attention.upper()}: {layout.layers} layers, {layout.kv_heads_per_rank} KV "
            f"head(s) x {layout.head_dim} per rank"
        )
        regions = f"{geo.regions} (K and V per layer)"
    blen = geo.block_len[0]
    per_token = geo.bytes_per_block // geo.block_size
    chunks = -(-_REFERENCE_TOKENS // geo.block_size)
    return [
        f"model        {title}",
        f"attention    {shape}",
        f"dtype        {layout.dtype} ({layout.dtype_bytes} "
        f"byte{'s' if layout.dtype_bytes != 1 else ''}), tp={tp}",
        f"regions      {regions}",
        f"block_len    {blen} bytes per {geo.block_size}-token block per region ({_size(blen)})",
        f"per token    {per_token} bytes per rank ({_size(per_token)})",
        f"per chunk    {geo.bytes_per_block} bytes = {geo.block_size} tokens x {geo.regions} "
        f"regions ({_size(geo.bytes_per_block)})",
        f"128K tokens  {chunks} chunks, {_size(chunks * geo.bytes_per_block)} per rank",
        f"config       model: {{{key}: {source_value}, tp: {tp}, block_size: {block_size}}}",
        f"resolves to  regions: {geo.regions}, block_len: [{blen}]",
    ]


def _preset_list() -> list[str]:
    width = max(len(n) for n in PRESETS)
    out = ["presets (kvsim geometry NAME for details):"]
    out += [f"  {p.name:<{width}}  {p.summary}  [{p.hf_id}]" for p in PRESETS.values()]
    return out
