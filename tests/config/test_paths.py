"""Every documented bound of every numeric config field holds, one test per bound.

The tests are generated from the config models themselves: a field added
tomorrow gets its tests without anyone writing them, and a numeric field
without an upper bound fails ``test_every_numeric_field_has_bounds``.
"""

from __future__ import annotations

import json
import math
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ValidationError

from sim.config import ExperimentConfig
from sim.config.paths import CONFIG_DIR

#: Numeric fields bounded by a validator of their own instead of Field(le=...).
VALIDATED_ELSEWHERE = {"output.percentiles": "each value must be above 0 and below 100"}
#: Fields whose value only means something in model mode (real mode refuses them).
MODEL_MODE_ONLY = ("machine.",)
#: Siblings a field needs before it is looked at (tp applies to a preset's geometry).
SIBLINGS: dict[str, dict[str, Any]] = {"model.tp": {"preset": "llama-3.1-8b"}}


@dataclass(frozen=True)
class Bounded:
    """One numeric field, where it sits, and its bounds."""

    path: tuple[str, ...]
    #: Discriminator values of the union members on the way, e.g. {"workload.arrival": ...}.
    tags: tuple[tuple[str, str, str], ...]
    kind: type
    upper: tuple[str, float] | None
    lower: tuple[str, float] | None
    item: bool  # the bound is on the items of a tuple field

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


def _members(ann: Any) -> list[type[BaseModel]]:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    return [m for a in typing.get_args(ann) for m in _members(a)]


def _numeric(ann: Any) -> tuple[type | None, list[Any], bool]:
    """(int or float, bound metadata, is an item bound) of a possibly wrapped annotation."""
    if ann in (int, float):
        return ann, [], False
    origin = typing.get_origin(ann)
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if origin is typing.Annotated:
        kind, meta, item = _numeric(args[0])
        inner = [m for x in ann.__metadata__ for m in getattr(x, "metadata", [x])]
        return kind, [*meta, *inner], item
    if origin is tuple and args:
        kind, meta, _ = _numeric(args[0])
        return kind, meta, True
    for a in args:
        kind, meta, item = _numeric(a)
        if kind is not None:
            return kind, meta, item
    return None, [], False


def _tag(model: type[BaseModel]) -> tuple[str, str] | None:
    for disc in ("kind", "dist"):
        f = model.model_fields.get(disc)
        if f is not None and isinstance(f.default, str):
            return disc, f.default
    return None


def bounded_fields() -> list[Bounded]:
    out: list[Bounded] = []

    def walk(model: type[BaseModel], path: tuple[str, ...], tags: tuple) -> None:
        for name, f in model.model_fields.items():
            members = _members(f.annotation)
            if members:
                for m in members:
                    tag = _tag(m) if len(members) > 1 else None
                    extra = ((".".join((*path, name)), *tag),) if tag else ()
                    walk(m, (*path, name), (*tags, *extra))
                continue
            if f.annotation is bool:
                continue
            kind, meta, item = _numeric(f.annotation)
            if kind is None or kind is bool:
                continue
            meta = [*f.metadata, *meta] if not item else meta
            upper = next(
                (("le", m.le) for m in meta if isinstance(m, Le)),
                next((("lt", m.lt) for m in meta if isinstance(m, Lt)), None),
            )
            lower = next(
                (("ge", m.ge) for m in meta if isinstance(m, Ge)),
                next((("gt", m.gt) for m in meta if isinstance(m, Gt)), None),
            )
            out.append(Bounded((*path, name), tags, kind, upper, lower, item))

    walk(ExperimentConfig, (), ())
    return out


FIELDS = bounded_fields()
TRACE_LINE = {"timestamp": 0, "input_length": 2048, "output_length": 1, "hash_ids": [1, 2, 3, 4]}


def _raw(field: Bounded, value: Any, tmp_path: Path) -> dict[str, Any]:
    """The smallest config that sets ``field`` to ``value`` (siblings it needs filled in)."""
    trace = tmp_path / "trace.jsonl"
    trace.write_text(json.dumps(TRACE_LINE) + "\n")
    raw: dict[str, Any] = {"name": "bounds"}
    if field.dotted.startswith(MODEL_MODE_ONLY):
        raw["mode"] = "model"
    for where, disc, tag in field.tags:
        node = raw
        for part in where.split("."):
            node = node.setdefault(part, {})
        node[disc] = tag
        if tag in ("trace", "empirical"):
            node["path"] = str(trace)
        if tag == "uniform":
            node.update(low=1, high=1)
        if tag == "lognormal":
            node["median"] = 1
    node = raw
    for part in field.path[:-1]:
        node = node.setdefault(part, {})
    node[field.path[-1]] = [value] if field.item else value
    node.update(SIBLINGS.get(field.dotted, {}))
    if field.path[-1] == "low":  # keep low <= high
        node["high"] = value
    return raw


def _errors(raw: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    try:
        ExperimentConfig.model_validate(raw, context={CONFIG_DIR: tmp_path})
    except ValidationError as exc:
        return exc.errors()
    return []


def _names_field(err: dict[str, Any], field: Bounded) -> bool:
    loc = [x for x in err["loc"] if isinstance(x, str)]
    return loc[-len(field.path) :] == list(field.path) or field.path[-1] in loc[-2:]


def _past(bound: float, kind: type, up: bool) -> Any:
    if kind is int:
        return int(bound) + (1 if up else -1)
    step = max(abs(bound) * 1e-6, 1e-9)
    return float(bound) + (step if up else -step)


def test_every_numeric_field_has_bounds() -> None:
    assert len(FIELDS) > 40  # the walk reaches the nested and union models
    unbounded = [
        f.dotted
        for f in FIELDS
        if (f.upper is None and f.dotted not in VALIDATED_ELSEWHERE)
        or (f.lower is None and f.dotted not in VALIDATED_ELSEWHERE and f.dotted != "base_addr")
    ]
    assert unbounded == [], f"numeric fields without a documented bound: {unbounded}"


UPPER = [f for f in FIELDS if f.upper is not None]
LOWER = [f for f in FIELDS if f.lower is not None]


@pytest.mark.parametrize("field", UPPER, ids=[f"{f.dotted}<={f.upper[1]:g}" for f in UPPER])
def test_past_the_upper_bound_is_refused(field: Bounded, tmp_path: Path) -> None:
    op, bound = field.upper
    value = _past(bound, field.kind, up=True) if op == "le" else bound
    errs = _errors(_raw(field, value, tmp_path), tmp_path)
    mine = [e for e in errs if _names_field(e, field)]
    assert mine, f"{field.dotted} = {value!r} was accepted (bound {op} {bound})"
    assert any(e["type"] in ("less_than_equal", "less_than") for e in mine), mine


@pytest.mark.parametrize("field", UPPER, ids=[f"{f.dotted}=={f.upper[1]:g}" for f in UPPER])
def test_the_upper_bound_itself_is_within_range(field: Bounded, tmp_path: Path) -> None:
    op, bound = field.upper
    value = bound if op == "le" else _past(bound, field.kind, up=False)
    value = int(value) if field.kind is int else float(value)
    errs = _errors(_raw(field, value, tmp_path), tmp_path)
    assert not [
        e for e in errs if _names_field(e, field) and e["type"] in ("less_than_equal", "less_than")
    ], errs


@pytest.mark.parametrize("field", LOWER, ids=[f"{f.dotted}>={f.lower[1]:g}" for f in LOWER])
def test_past_the_lower_bound_is_refused(field: Bounded, tmp_path: Path) -> None:
    op, bound = field.lower
    value = _past(bound, field.kind, up=False) if op == "ge" else bound
    if field.kind is float and op == "gt":
        value = float(bound)
    errs = _errors(_raw(field, value, tmp_path), tmp_path)
    mine = [e for e in errs if _names_field(e, field)]
    assert mine and any(e["type"] in ("greater_than_equal", "greater_than") for e in mine), (
        field.dotted,
        value,
        errs,
    )


def test_non_finite_floats_are_refused(tmp_path: Path) -> None:
    floats = [f for f in FIELDS if f.kind is float]
    assert floats
    for field in floats:
        for value in (math.inf, math.nan):
            errs = _errors(_raw(field, value, tmp_path), tmp_path)
            assert [e for e in errs if _names_field(e, field)], (field.dotted, value)
