"""What makes two configs "the same experiment", so a resume never mixes results.

The identity of an experiment is its resolved config (defaults filled in) minus
where the results go: moving a run directory or passing ``--out`` does not change
what was measured, any other field does.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..config import ExperimentConfig

__all__ = ["config_hash", "config_identity", "first_difference"]

_IGNORED = ("output",)


def config_identity(cfg: ExperimentConfig) -> dict[str, Any]:
    data = cfg.model_dump(mode="json")
    for key in _IGNORED:
        data.pop(key, None)
    return data


def config_hash(cfg: ExperimentConfig) -> str:
    """SHA-256 of the identity, as canonical JSON (sorted keys)."""
    text = json.dumps(config_identity(cfg), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def first_difference(old: Any, new: Any, path: str = "") -> str | None:
    """``"dotted.path: old → new"`` for the first place two JSON trees differ, else None."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            if key in _IGNORED and not path:
                continue
            sub = f"{path}.{key}" if path else str(key)
            if key not in old:
                return f"{sub}: (absent) → {new[key]!r}"
            if key not in new:
                return f"{sub}: {old[key]!r} → (absent)"
            found = first_difference(old[key], new[key], sub)
            if found:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if old == new else f"{path or '(config)'}: {old!r} → {new!r}"
