"""Where a geometry's ``regions`` and ``block_len`` come from: written out, a preset, or a file.

``model.preset`` names a built-in model and ``model.hf_config`` a Hugging Face
``config.json``; either is turned into ``regions`` and ``block_len`` for the
configured ``block_size``, ``tp`` and ``kv_dtype`` before the geometry's own
validation runs, so the rest of kvsim only ever sees the plain fields. Values
the user also wrote out must agree with what the model implies (this also lets
an already-resolved config be validated again unchanged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.config.hf_config import HFConfigError, KVLayout, kv_layout, read_hf_config
from sim.config.paths import resolve_path
from sim.config.presets import get_preset

__all__ = ["layout_for", "resolve_model_source"]

#: Geometry keys that only mean something when a preset or hf_config is given.
#: Bounds of model.tp and model.block_size (the fields use them too).
TP_MAX = 1024
BLOCK_SIZE_MAX = 1 << 20

_SOURCE_ONLY = {"tp": 1, "kv_dtype": "auto"}


def layout_for(
    preset: str | None, hf_config: str | Path | None, tp: int, kv_dtype: str | None
) -> tuple[str, KVLayout]:
    """(canonical source, layout) of a preset name or config.json path; ValueError otherwise."""
    if preset is not None:
        p = get_preset(preset)
        try:
            return p.name, kv_layout(p.config, tp, kv_dtype)
        except HFConfigError as exc:
            raise ValueError(f"preset {p.name!r}: {exc}") from None
    assert hf_config is not None
    try:
        return str(hf_config), kv_layout(read_hf_config(hf_config), tp, kv_dtype)
    except HFConfigError as exc:
        msg = str(exc)
        where = "" if msg.startswith(str(hf_config)) else f"{hf_config}: "
        raise ValueError(f"hf_config {where}{msg}") from None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def resolve_model_source(data: dict[str, Any], context: Any, block_size_default: int) -> Any:
    """``data`` with regions and block_len filled in; ValueError naming the field on conflict.

    Values of the wrong type are left for the field validators to report.
    """
    preset, hf = data.get("preset"), data.get("hf_config")
    if preset is None and hf is None:
        for key, default in _SOURCE_ONLY.items():
            if data.get(key, default) != default:
                raise ValueError(f"{key} applies only with preset or hf_config")
        return data
    if preset is not None and hf is not None:
        raise ValueError("set preset or hf_config, not both")
    tp, kv_dtype = data.get("tp", 1), data.get("kv_dtype", "auto")
    block_size = data.get("block_size", block_size_default)
    if not (
        _is_int(tp)
        and _is_int(block_size)
        and isinstance(kv_dtype, str)
        and isinstance(preset if preset is not None else hf, str)
    ):
        return data
    if not (1 <= tp <= TP_MAX and 1 <= block_size <= BLOCK_SIZE_MAX):
        return data  # out of range: the field's own bound reports it
    out = dict(data)
    if hf is not None:
        out["hf_config"] = hf = str(resolve_path(hf, context))
    field = "preset" if preset is not None else "hf_config"
    source, layout = layout_for(preset, hf, tp, kv_dtype)
    if preset is not None:
        out["preset"] = source
    resolved: dict[str, Any] = {
        "regions": layout.regions,
        "block_len": (layout.block_len(block_size),),
    }
    for key, value in resolved.items():
        given = data.get(key)
        if given is None:
            continue
        as_given = tuple(given) if isinstance(given, (list, tuple)) else given
        if as_given != value:
            raise ValueError(
                f"{key} {given!r} disagrees with {field} {source!r}, which implies {value!r}; "
                f"remove {key} or {field}"
            )
    out.update(resolved)
    return out
