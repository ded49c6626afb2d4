"""``--set key=value``: change one config field from the command line, for one run.

The value is read as YAML (``8`` is a number, ``[1, 2]`` a list, ``numpy`` a
string) under the bounds of a config file (``sim.config.yaml_reader``), then set
at the dotted path in the config's raw mapping before it is validated, so an
override is checked exactly like the same line in the file.

Two cases need care:

* ``sweep.<axis>=[...]`` sets a sweep axis (the axis name keeps its dots:
  ``sweep.connector.workers=[1,2]``);
* a field that the config sweeps (``connector.workers=2`` when the file has
  ``sweep: {connector.workers: [1, 4]}``) replaces that axis's values by the one
  given (a list gives several), since a sweep would otherwise override it again
  on every point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.config.yaml_reader import read_yaml_value
from sim.files.read import excerpt

__all__ = ["Override", "apply_overrides", "parse_overrides"]

Override = tuple[str, Any]


class _OverrideError(ValueError):
    pass


def parse_overrides(items: Sequence[str]) -> list[Override]:
    """``["a.b=1", ...]`` -> ``[("a.b", 1), ...]``; ValueError (one line) when malformed,
    ConfigError (one line) when the value is not plain, bounded YAML."""
    out: list[Override] = []
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise _OverrideError(
                f"--set {excerpt(item)}: expected KEY=VALUE with a dotted key, e.g. "
                "--set connector.workers=8"
            )
        if any(not part for part in key.split(".")):
            raise _OverrideError(
                f"--set {excerpt(item)}: {excerpt(key)} has an empty part between dots"
            )
        shown = key if len(key) <= 60 else excerpt(key)
        value = read_yaml_value(text, f"--set {shown}") if text.strip() else ""
        out.append((key, value))
    return out


def _set(raw: dict[str, Any], parts: list[str], value: Any) -> dict[str, Any]:
    head, rest = parts[0], parts[1:]
    out = dict(raw)
    if not rest:
        out[head] = value
        return out
    inner = out.get(head)
    if inner is not None and not isinstance(inner, dict):
        raise _OverrideError(
            f"--set {'.'.join(parts)}: {head} is {excerpt(inner)} in the config, not a section; "
            f"set {head} itself"
        )
    out[head] = _set(inner or {}, rest, value)
    return out


def apply_overrides(raw: dict[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """Copy of ``raw`` with every override applied, in order."""
    for key, value in overrides:
        sweep = raw.get("sweep")
        if key.startswith("sweep.") and key != "sweep.":
            axis = key[len("sweep.") :]
            values = value if isinstance(value, list) else [value]
            raw = {**raw, "sweep": {**(sweep if isinstance(sweep, dict) else {}), axis: values}}
        elif isinstance(sweep, dict) and key in sweep:
            values = value if isinstance(value, list) else [value]
            raw = {**raw, "sweep": {**sweep, key: values}}
            if values:  # the base value too, so that the rest of the config is checked with it
                raw = _set(raw, key.split("."), values[0])
        else:
            raw = _set(raw, key.split("."), value)
    return raw
