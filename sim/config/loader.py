"""YAML file (or a mapping built in Python) -> validated ExperimentConfig and its points.

Every error is one line that names the file, the line where YAML knows it, the
field and what is allowed, because the user's next move is to open the file at
that line. A mapping built in Python (:func:`parse_mapping`) gets the same checks
and messages, naming ``<python>`` instead of a file.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from connectors import registry
from sim.config.experiment import ORDER_KEY, ExperimentConfig, Point, expand_points
from sim.config.grid import check_grid
from sim.config.overrides import apply_overrides, parse_overrides
from sim.config.paths import CONFIG_DIR
from sim.config.plugins import plugin_error, plugin_scope, read_plugin
from sim.config.sweep_axes import axis_problem, config_models, sweep_value_line
from sim.config.yaml_reader import read_yaml
from sim.errors import ConfigError
from sim.files.read import excerpt

__all__ = [
    "ConfigError",
    "ParsedConfig",
    "load_config",
    "parse_config",
    "parse_mapping",
    "read_config",
    "read_mapping",
]


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest node along ``loc`` that the YAML tree has."""
    line = None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for k, v in node.value:
                if k.value == key:
                    line, nxt = k.start_mark.line + 1, v
                    break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _model_at(raw_loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The config model that holds the field at ``raw_loc`` (pydantic's loc, with union
    tags), so an unknown key can be matched against the right field names."""
    model: type[BaseModel] | None = ExperimentConfig
    parts = list(raw_loc[:-1])
    while parts and model is not None:
        key = parts.pop(0)
        field = model.model_fields.get(key)
        if field is None:
            return None
        members = config_models(field.annotation)
        if len(members) > 1 and parts:
            tag = parts.pop(0)
            members = [m for m in members if tag in _tags(m)]
        model = members[0] if len(members) == 1 else None
    return model


def _tags(model: type[BaseModel]) -> set[Any]:
    return {f.default for name, f in model.model_fields.items() if name in ("kind", "dist")}


def close_matches(word: str, names: Sequence[str]) -> list[str]:
    """difflib's closest of ``names`` to ``word`` (at most one), without comparing a word
    over four times the longest name: its ratio to any of them is at most 2/5, under
    difflib's 0.6 cutoff, so none would match, and a megabyte-long word took ~10 s of
    difflib's time (tests/e2e/test_hostile_corpus.py)."""
    if not names or len(word) > 4 * max(len(n) for n in names):
        return []
    return difflib.get_close_matches(word, names, n=1)


def _describe(err: dict[str, Any]) -> tuple[tuple[Any, ...], str]:
    loc = tuple(x for x in err["loc"] if not (isinstance(x, str) and x in _UNION_TAGS))
    kind = err["type"]
    if kind == "extra_forbidden":
        key = loc[-1]
        model = _model_at(tuple(err["loc"]))
        known = list(getattr(model, "model_fields", {})) if model else []
        close = close_matches(str(key), known)
        hint = f"did you mean '{close[0]}'?" if close else f"allowed: {', '.join(known)}"
        return loc, f"unknown key {excerpt(str(key))}; {hint}"
    if kind == "missing":
        return loc, "required field is missing"
    if kind == "union_tag_invalid":
        ctx = err.get("ctx", {})
        disc = str(ctx.get("discriminator", "kind")).strip("'")
        return loc, f"unknown {disc} {excerpt(ctx.get('tag'))}; allowed: {ctx.get('expected_tags')}"
    if kind == "union_tag_not_found":
        ctx = err.get("ctx", {})
        disc = str(ctx.get("discriminator", "kind")).strip("'")
        return loc, f"needs '{disc}'"
    msg = err["msg"].replace("Value error, ", "")
    given = err.get("input")
    words = _in_words(kind, loc, err)
    if words is not None:
        return loc, words
    said = f"got {excerpt(given)}" in msg  # a validator's own words name it already
    if kind not in ("model_type", "dict_type") and not isinstance(given, (dict, list)) and not said:
        msg += f" (got {excerpt(given)})"
    return loc, msg


def _in_words(kind: str, loc: tuple[Any, ...], err: dict[str, Any]) -> str | None:
    """pydantic's wording replaced by what is allowed, for the errors users meet most."""
    given = err.get("input")
    if kind in ("model_type", "dict_type", "model_attributes_type") and not isinstance(given, dict):
        return f"expected a section of settings ({{key: value, ...}}), got {excerpt(given)}"
    if kind in ("tuple_type", "list_type"):
        if loc and loc[0] == "sweep":
            return (
                f"the values of a sweep axis are a list, e.g. [{excerpt(given)}] or [1, 2, 4] "
                f"(got {excerpt(given)})"
            )
        return f"expected a list such as [1, 2] (got {excerpt(given)})"
    if kind == "string_type" and isinstance(given, bool):
        # The text is gone by now: YAML 1.1 made it a boolean (`name: off` -> False).
        return (
            f"expected a string, got the boolean {given} (YAML reads an unquoted on, off, "
            'yes, no, true or false as a boolean): quote it, e.g. "off"'
        )
    if kind == "string_pattern_mismatch":
        model = _model_at(tuple(err["loc"]))
        field = getattr(model, "model_fields", {}).get(loc[-1]) if loc else None
        allowed = field.description if field is not None and field.description else ""
        return f"{excerpt(given)} is not allowed" + (f"; {allowed}" if allowed else "")
    return None


_UNION_TAGS = {
    *("poisson", "closed", "constant", "onoff", "curve", "trace"),
    *("fixed", "uniform", "lognormal", "empirical"),
}


def _fmt_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        text = str(part) if len(str(part)) <= 60 else excerpt(str(part))
        out += f"[{part}]" if isinstance(part, int) else (f".{text}" if out else text)
    return out or "(top level)"


def _first(errors: Sequence[Any]) -> Any:
    """The error to report: an unknown key before a missing one of the same section
    (``{low: 16, hihg: 64}`` is the typo ``hihg``, not a missing ``high``)."""
    first = errors[0]
    if first["type"] == "missing":
        for err in errors:
            if err["type"] == "extra_forbidden" and err["loc"][:-1] == first["loc"][:-1]:
                return err
    return first


def _build(
    path: Path,
    node: yaml.Node | None,
    raw: dict[str, Any],
    where: str = "",
    overridden: tuple[str, ...] = (),
):
    try:
        cfg = ExperimentConfig.model_validate(raw, context={CONFIG_DIR: path.parent})
    except ValidationError as exc:
        loc, msg = _describe(_first(exc.errors()))
        sweep = raw.get("sweep")
        if loc == ("sweep_order",) and isinstance(sweep, dict) and ORDER_KEY in sweep:
            loc = ("sweep", ORDER_KEY)  # the user wrote it there (ExperimentConfig moves it)
        dotted = ".".join(str(x) for x in loc)
        line = (sweep_value_line(node, dotted, raw) if where else None) or _line_of(node, loc)
        at = _blame(path, line, dotted, overridden, msg)
        suffix = f" [at {where}]" if where else ""
        raise ConfigError(f"{at}: {_fmt_loc(loc)}: {msg}{suffix}") from None
    _check_variant(path, node, cfg, where, overridden)
    return cfg


def _blame(
    path: Any, line: int | None, dotted: str, overridden: tuple[str, ...], msg: str = ""
) -> str:
    """Where a bad value came from: the ``--set`` that gave it, else the file's line.

    An override of the field, of a section above it or of its sweep axis wins over the
    line of the file, which holds the value the override replaced; so does an override
    inside a section whose check (``msg``) names the overridden field (``--set
    workload.requests=5`` on a trace config: the file may have no ``requests`` line).
    """
    for key in overridden:
        for field in {key, key.removeprefix("sweep.")}:
            if dotted == field or dotted.startswith(field + "."):
                return f"{path} (--set {key})"
            inner = field.removeprefix(dotted + ".") if dotted else field
            if inner != field and msg and re.search(rf"\b{re.escape(inner)}\b", msg):
                return f"{path} (--set {key})"
    return f"{path}:{line}" if line else str(path)


def _check_variant(
    path: Path,
    node: yaml.Node | None,
    cfg: ExperimentConfig,
    where: str,
    overridden: tuple[str, ...] = (),
) -> None:
    suffix = f" [at {where}]" if where else ""
    point = {"connector": {"variant": cfg.connector.variant}}
    line = (sweep_value_line(node, "connector.variant", point) if where else None) or _line_of(
        node, ("connector", "variant")
    )
    at = _blame(path, line, "connector.variant", overridden)
    names = registry.address_variant_names()
    if cfg.connector.variant not in names:
        close = close_matches(cfg.connector.variant, names)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ConfigError(
            f"{at}: connector.variant: unknown variant {excerpt(cfg.connector.variant)}; "
            f"{hint}allowed: {', '.join(names)} (one of your own: plugins: [FILE] in the "
            f"config, or --plugin FILE; docs/your-connector.md){suffix}"
        )
    try:
        registry.get_address_variant(cfg.connector.variant).validate_options(cfg.connector.options)
    except (ValueError, TypeError) as exc:
        opts = {"connector": {"options": dict(cfg.connector.options)}}
        line = (
            (sweep_value_line(node, "connector.options", opts) if where else None)
            or _line_of(node, ("connector", "options"))
            or line
        )
        at = _blame(path, line, "connector.options", overridden)
        why = excerpt(exc, 300, quote=False)
        raise ConfigError(f"{at}: connector.options: {why}{suffix}") from None


@dataclass(frozen=True)
class ParsedConfig:
    """A validated config and its points, with where it came from: the file (or a
    :class:`_Source`) and its YAML tree, so that a check made after loading (the
    pre-flight checks of sim.preflight) can name the line of the field it refuses."""

    source: Any
    node: yaml.Node | None
    config: ExperimentConfig
    points: list[Point]

    def at(self, field: str) -> str:
        """``file:line`` of the dotted ``field`` (the file alone where no line is known)."""
        line = _line_of(self.node, tuple(field.split(".")))
        return f"{self.source}:{line}" if line else str(self.source)


def read_config(
    path: str | Path, overrides: Sequence[str] = (), plugins: Sequence[str] = ()
) -> ParsedConfig:
    """Load, validate and expand ``path``; raises ConfigError with a one-line message.

    ``overrides`` are ``--set KEY=VALUE`` strings applied before validation
    (``sim.config.overrides``); ``plugins`` are ``--plugin FILE`` paths (relative to
    the working directory), added to the config's own ``plugins:``. What the config
    would cost to run and the data files it names are checked above config, by
    sim.preflight (docs/design.md §2).
    """
    path = Path(path)
    raw, node = read_yaml(path)
    _refuse_order_on_top(path, node, raw, overrides)
    return _parse(path, node, raw, overrides, plugins)


def _refuse_order_on_top(
    path: Path, node: yaml.Node | None, raw: Any, overrides: Sequence[str]
) -> None:
    """``sweep_order`` is the model's name for ``sweep: {order: ...}``, where a config
    writes it; at the top of a file (or a ``--set``) it is an unknown key. (A mapping
    built in Python from a loaded config's dump carries it there, and is accepted.)"""
    sets = [o for o in overrides if o.split("=", 1)[0].strip() == "sweep_order"]
    if not (isinstance(raw, dict) and "sweep_order" in raw) and not sets:
        return
    line = _line_of(node, ("sweep_order",)) if not sets else None
    at = f"{path} (--set sweep_order)" if sets else (f"{path}:{line}" if line else str(path))
    raise ConfigError(
        f"{at}: sweep_order: unknown key at the top level; the order of a sweep is written "
        f"under it: sweep: {{{ORDER_KEY}: grid}} (or --set sweep.{ORDER_KEY}=grid); allowed: "
        "interleaved, grid"
    )


def parse_config(
    path: str | Path, overrides: Sequence[str] = (), plugins: Sequence[str] = ()
) -> tuple[ExperimentConfig, list[Point]]:
    """:func:`read_config`'s config and points."""
    parsed = read_config(path, overrides, plugins)
    return parsed.config, parsed.points


@dataclass(frozen=True)
class _Source:
    """Stands where a config file's path would for a mapping built in Python: ``str()``
    names it in messages, ``parent`` is where relative data-file paths are taken from."""

    label: str
    parent: Path

    def __str__(self) -> str:
        return self.label


def read_mapping(
    data: Mapping[str, Any],
    overrides: Sequence[str] = (),
    *,
    base_dir: str | Path | None = None,
    label: str = "<python>",
    plugins: Sequence[str] = (),
) -> ParsedConfig:
    """Validate and expand a config given as a mapping (what the YAML file would hold).

    The same checks and one-line ConfigErrors as :func:`read_config`; messages
    name ``label`` instead of a file. Relative data-file paths are taken from
    ``base_dir`` (default: the working directory).
    """
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    return _parse(_Source(label, base.absolute()), None, data, overrides, plugins)


def parse_mapping(
    data: Mapping[str, Any],
    overrides: Sequence[str] = (),
    *,
    base_dir: str | Path | None = None,
    label: str = "<python>",
    plugins: Sequence[str] = (),
) -> tuple[ExperimentConfig, list[Point]]:
    """:func:`read_mapping`'s config and points."""
    parsed = read_mapping(data, overrides, base_dir=base_dir, label=label, plugins=plugins)
    return parsed.config, parsed.points


def _read_plugins(
    path: Any, node: yaml.Node | None, raw: dict[str, Any], extra: Sequence[str]
) -> dict[str, Any]:
    """``raw`` with each ``plugins:`` entry read (sim.config.plugins): paths in the
    config against its directory, ``--plugin`` paths against the working directory."""
    listed = raw.get("plugins", [])
    if not isinstance(listed, (list, tuple)):  # `plugins:` with nothing under it is None
        line = _line_of(node, ("plugins",))
        at = f"{path}:{line}" if line else str(path)
        got = (
            "nothing (an empty `plugins:`: remove it, or list a file)"
            if listed is None
            else (f"{excerpt(listed)}")
        )
        raise ConfigError(
            f"{at}: plugins: expected a list of .py files, e.g. [my_variant.py], got {got}"
        )
    if not listed and not extra:
        return raw
    read = []
    for i, entry in enumerate(listed):
        try:
            read.append(read_plugin(entry, Path(path.parent).absolute()))
        except ValueError as exc:
            line = _line_of(node, ("plugins", i))
            at = f"{path}:{line}" if line else str(path)
            raise ConfigError(f"{at}: plugins[{i}]: {exc}") from None
    for entry in extra:
        try:
            read.append(read_plugin(entry, Path.cwd()))
        except ValueError as exc:
            raise ConfigError(plugin_error(entry, exc)) from None
    return {**raw, "plugins": read}


def _parse(
    path: Any,
    node: yaml.Node | None,
    raw: Any,
    overrides: Sequence[str],
    plugins: Sequence[str] = (),
) -> ParsedConfig:
    """Validate and expand ``raw``; ``path`` is the file (or a :class:`_Source`).

    The config's plug-ins are registered while it is validated (its variant names
    are checked against them) and removed again when this returns.
    """
    if isinstance(raw, Mapping) and not isinstance(raw, dict):
        raw = dict(raw)
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: top level must be a mapping of sections, got {type(raw).__name__}"
        )
    bad = [k for k in raw if not isinstance(k, str)]
    if bad:
        raise ConfigError(f"{path}: top-level key {excerpt(bad[0])} must be a string")
    overridden: tuple[str, ...] = ()
    if overrides:
        try:
            parsed = parse_overrides(overrides)
            raw = apply_overrides(raw, parsed)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        overridden = tuple(k for k, _ in parsed)
    raw = _read_plugins(path, node, raw, plugins)
    with plugin_scope(raw.get("plugins", ())):
        return _validate(path, node, raw, overridden)


def _validate(
    path: Any, node: yaml.Node | None, raw: dict[str, Any], overridden: tuple[str, ...]
) -> ParsedConfig:
    cfg = _build(path, node, raw, overridden=overridden)
    for axis in cfg.sweep:
        problem = axis_problem(ExperimentConfig, axis)
        if problem:
            line = _line_of(node, ("sweep", axis))
            at = f"{path}:{line}" if line else str(path)
            raise ConfigError(f"{at}: sweep.{axis}: {problem}")
    # The grid's size, before it is expanded (the rest of the budget: sim.preflight).
    line = _line_of(node, ("sweep",))
    check_grid(f"{path}:{line}" if line else str(path), cfg.sweep, cfg.repeats, cfg.limits)
    points = expand_points(raw, lambda r, where: _build(path, node, r, where, overridden))
    return ParsedConfig(path, node, cfg, points)


def load_config(path: str | Path) -> ExperimentConfig:
    return parse_config(path)[0]
