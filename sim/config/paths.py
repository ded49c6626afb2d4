"""Files a config names (traces, model config.json) are relative to the config file's directory.

The loader passes ``{"config_dir": <dir of the YAML>}`` as pydantic validation
context; configs built in code without that context resolve relative paths
against the working directory. The config keeps the resolved absolute path, so a
run's manifest says which file was read, the config is the same however the
YAML file itself was named, and a sweep's child processes, which get the resolved
config in their spec, find the same files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["CONFIG_DIR", "config_dir", "resolve_path"]

#: Key of the validation-context entry that holds the config file's directory.
CONFIG_DIR = "config_dir"


def config_dir(context: Any) -> Path | None:
    if isinstance(context, dict) and context.get(CONFIG_DIR) is not None:
        return Path(context[CONFIG_DIR])
    return None


def resolve_path(value: str, context: Any) -> Path:
    """``value`` joined to the config's directory unless it is absolute, made absolute."""
    p = Path(value).expanduser()
    base = config_dir(context)
    if not p.is_absolute() and base is not None:
        p = base / p
    return p.resolve()
