"""Variant options in words: name, type, default and meaning of each ``connector.options`` key.

Used by ``kvsim variants NAME`` and by the generated docs/config.md, so that a
variant's options are documented where users look, from the one place they are
defined (the variant's ``Options`` model).
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from connectors import registry

__all__ = ["option_rows", "variant_options_markdown"]


def _type(field: Any) -> str:
    tp = field.annotation
    if get_origin(tp) is Literal:
        return " or ".join(str(a) for a in get_args(tp))
    name = getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
    return {"bool": "true/false", "int": "integer", "float": "number", "str": "text"}.get(
        name, name
    )


def option_rows(model: type[BaseModel] | None) -> list[tuple[str, str, str, str]]:
    """(name, type, default, meaning) of every option of a variant's Options model."""
    if model is None:
        return []
    rows = []
    for name, field in model.model_fields.items():
        if field.default is not PydanticUndefined:
            d = field.default
            default = str(d).lower() if isinstance(d, bool) else repr(d)
        else:
            default = "required"
        rows.append((name, _type(field), default, field.description or ""))
    return rows


def variant_options_markdown() -> list[str]:
    """The docs/config.md section: one table per address variant that takes options."""
    out = [
        "\n## `connector.options` — per variant\n",
        "Options of the chosen `connector.variant` (`kvsim variants NAME` prints the same). "
        "A variant not listed takes no options.",
    ]
    for name in registry.address_variant_names():
        cls = registry.get_address_variant(name)
        rows = option_rows(cls.Options)
        if not rows:
            continue
        out += [f"\n### `{name}`\n", f"{cls.description}\n"]
        out += ["| option | type | default | meaning |", "|---|---|---|---|"]
        bar = "\\|"
        out += [f"| `{n}` | {t} | `{d}` | {m.replace('|', bar)} |" for n, t, d, m in rows]
    return out
