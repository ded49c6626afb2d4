"""Sweep axes checked before any point is built, and errors pointed at the swept value.

A sweep axis is a dotted path into the config (``connector.workers``). A typo in
it (``store.bandwith_gbps``) or a path that skips its section (``workers``) is
reported at the axis's line, with the field it most likely meant; an error in
one swept value (``[numpy, nunba]``) is reported at that value's line, not at
the field's line elsewhere in the file.
"""

from __future__ import annotations

import difflib
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel

__all__ = ["axis_problem", "config_models", "field_paths", "sweep_value_line"]


def config_models(annotation: Any) -> list[type[BaseModel]]:
    """The config models an annotation can hold (itself, or the members of a union)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        out.extend(config_models(arg))
    return out


def _is_mapping(annotation: Any) -> bool:
    return get_origin(annotation) is dict or annotation is dict


def field_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every dotted field path of ``model`` (union members' fields merged)."""
    out: list[str] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        members = config_models(field.annotation)
        if members:
            for m in members:
                out += [p for p in field_paths(m, path + ".") if p not in out]
        else:
            out.append(path)
    return out


def axis_problem(root: type[BaseModel], axis: str) -> str | None:
    """Why ``axis`` is not a config field (with a did-you-mean), or None when it is."""
    models: list[type[BaseModel]] = [root]
    parts = axis.split(".")
    for i, part in enumerate(parts):
        fields = {n: f for m in models for n, f in m.model_fields.items()}
        if i == 0:
            fields = {
                n: f
                for n, f in fields.items()
                if n not in ("sweep", "sweep_order", "repeats", "name", "plugins")
            }
        if part not in fields:
            return _did_you_mean(root, axis, sorted(fields), part)
        annotation = fields[part].annotation
        if _is_mapping(annotation):
            return None  # free-form mapping (connector.options): any key
        models = config_models(annotation)
        if not models:
            if i < len(parts) - 1:
                return f"{'.'.join(parts[: i + 1])} is a value, not a section"
            return None
    return "names a whole section; sweep one of its fields"


def _did_you_mean(root: type[BaseModel], axis: str, here: list[str], part: str) -> str:
    paths = [p for p in field_paths(root) if not p.startswith(("sweep", "repeats", "name"))]
    close = difflib.get_close_matches(axis, paths, n=1, cutoff=0.75)
    if not close:  # `workers` for `connector.workers`: the last part matches exactly
        close = [p for p in paths if p.rsplit(".", 1)[-1] == axis.rsplit(".", 1)[-1]][:1]
    if not close:
        close = [
            p
            for p in paths
            if p.rsplit(".", 1)[-1] in difflib.get_close_matches(part, here, n=1)
            and p.endswith(part)
        ][:1]
    if close:
        return f"not a config field; did you mean '{close[0]}'?"
    near = difflib.get_close_matches(part, here, n=1)
    if near:
        return f"not a config field; did you mean '{near[0]}' ({part!r} is not a field)?"
    return f"not a config field; {part!r} is none of {', '.join(here)}"


def _value_at(raw: dict[str, Any], axis: str) -> Any:
    obj: Any = raw
    for part in axis.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def sweep_value_line(node: yaml.Node | None, dotted: str, raw: dict[str, Any]) -> int | None:
    """1-based line of the sweep value that set the field at ``dotted`` in this point
    (``raw`` is the point's raw config), else of its axis; None when it is not swept."""
    if not isinstance(node, yaml.MappingNode):
        return None
    sweep = next((v for k, v in node.value if k.value == "sweep"), None)
    if not isinstance(sweep, yaml.MappingNode):
        return None
    for key, values in sweep.value:
        axis = str(key.value)
        if not (dotted == axis or dotted.startswith(axis + ".") or axis.startswith(dotted + ".")):
            continue
        value = _value_at(raw, axis)
        if isinstance(values, yaml.SequenceNode):
            for item in values.value:
                if isinstance(item, yaml.ScalarNode) and item.value == _scalar(value):
                    return item.start_mark.line + 1
        return key.start_mark.line + 1
    return None


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
