"""Generate docs/config.md from the config models, so the reference cannot drift.

Run ``python -m sim.config.doc > docs/config.md``; a test fails when the file is stale.
"""

from __future__ import annotations

import sys
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from sim.config import ExperimentConfig
from sim.config.option_doc import variant_options_markdown
from sim.config.sweep_axes import config_models

__all__ = ["render"]


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Annotated:
        return _type_name(args[0])
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if origin is Literal:
        return " or ".join(f"`{a}`" for a in args)
    if origin in (tuple, list):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return "mapping"
    if tp is type(None):
        return "null"
    if tp is Any:
        return "any"
    return getattr(tp, "__name__", str(tp))


def _default(field: Any) -> str:
    if field.default is not PydanticUndefined:
        d = field.default
        return "" if isinstance(d, BaseModel) else f"`{d!r}`"
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return ""
        return "(section)" if isinstance(value, BaseModel) else f"`{value!r}`"
    return "**required**"


def _constraints(field: Any) -> str:
    """The tightest bounds among the field's metadata (types.py adds loose sanity caps)."""
    lower: tuple[str, float] | None = None
    upper: tuple[str, float] | None = None
    extra = []
    for meta in field.metadata:
        for attr, sym in (("gt", ">"), ("ge", "≥")):
            v = getattr(meta, attr, None)
            if v is not None and (lower is None or v > lower[1]):
                lower = (sym, v)
        for attr, sym in (("lt", "<"), ("le", "≤")):
            v = getattr(meta, attr, None)
            if v is not None and (upper is None or v < upper[1]):
                upper = (sym, v)
        if getattr(meta, "min_length", None):
            extra.append(f"at least {meta.min_length} item(s)")
        if getattr(meta, "pattern", None):
            extra.append(f"pattern `{meta.pattern}`")
    parts = [
        f"{b[0]} {b[1]:,}" if isinstance(b[1], int) else f"{b[0]} {b[1]:g}"
        for b in (lower, upper)
        if b is not None
    ]
    return ", ".join(parts + extra)


def _section(model: type[BaseModel], prefix: str, out: list[str], seen: set[str]) -> None:
    nested: list[tuple[str, type[BaseModel]]] = []
    title = prefix or "top level"
    # The docstring's first paragraph, whole (not its first line: a sentence may wrap).
    first = (model.__doc__ or "").strip().split("\n\n", 1)[0]
    doc = " ".join(line.strip() for line in first.splitlines())
    out.append(f"\n## `{title}`" + (f" — {model.__name__}" if prefix else "") + "\n")
    if doc:
        out.append(doc + "\n")
    out.append("| field | type | default | allowed | meaning |")
    out.append("|---|---|---|---|---|")
    for name, field in model.model_fields.items():
        members = config_models(field.annotation)
        path = f"{prefix}.{name}" if prefix else name
        kind = " or ".join(m.__name__ for m in members) if members else _type_name(field.annotation)
        desc = (field.description or "").replace("|", "\\|")
        out.append(f"| `{name}` | {kind} | {_default(field)} | {_constraints(field)} | {desc} |")
        for m in members:
            nested.append((path if len(members) == 1 else f"{path} ({m.__name__})", m))
    for path, m in nested:
        key = f"{path}:{m.__name__}"
        if key not in seen:
            seen.add(key)
            _section(m, path, out, seen)


def render() -> str:
    out = [
        "# Config reference",
        "",
        "Generated from the config models by `python -m sim.config.doc`; do not edit by hand.",
        "Unknown keys are errors. Times are in the unit their name ends with (`_ms`, `_s`).",
        "Every field can be a sweep axis by its dotted path, e.g. `connector.workers`.",
    ]
    _section(ExperimentConfig, "", out, set())
    out += variant_options_markdown()
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
