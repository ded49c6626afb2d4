"""Every data file a config names, read once before the run starts.

A malformed line in a trace would otherwise fail a point run minutes into the sweep;
read here, it fails ``validate`` and ``run`` at once, naming the file's line and the
config field (and its line) that names the file.
"""

from __future__ import annotations

from sim.config.loader import ParsedConfig
from sim.errors import ConfigError
from sim.workload.trace import read_trace

__all__ = ["check_data_files"]


def check_data_files(parsed: ParsedConfig) -> None:
    """Read every trace the config and its points name, once each (ConfigError for the
    first that cannot be read). Relative data paths were already resolved against the
    config's directory."""
    seen: set[str] = set()
    for cfg in [parsed.config, *(p.config for p in parsed.points)]:
        for field, file in cfg.workload.data_files():
            if file in seen:
                continue
            seen.add(file)
            try:
                read_trace(file)
            except ConfigError as exc:
                raise ConfigError(f"{exc} [{field} at {parsed.at(field)}]") from None
