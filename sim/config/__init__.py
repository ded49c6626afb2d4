"""Experiment configuration: YAML in, immutable validated objects out.

The loader's names (YAML reading, overrides, the error messages' formatting) are
imported on first use (module ``__getattr__``): a point child rebuilds its config from
its spec and never reads YAML (kvsim bench startup: yaml and the loader were ~20 ms of
its start-up).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from sim.config.engine import EngineConfig, HeapConfig
from sim.config.experiment import ExperimentConfig, Point, expand_points
from sim.config.geometry import GeometryConfig
from sim.config.sections import ConnectorConfig, GilConfig, OutputConfig, StoreConfig
from sim.config.workload import WorkloadConfig
from sim.errors import ConfigError

if TYPE_CHECKING:
    from sim.config.loader import load_config, parse_config, parse_mapping

#: The loader's names, imported from sim.config.loader on first use.
_LOADER = ("load_config", "parse_config", "parse_mapping")

__all__ = [
    "ConfigError",
    "ConnectorConfig",
    "EngineConfig",
    "ExperimentConfig",
    "GeometryConfig",
    "GilConfig",
    "HeapConfig",
    "OutputConfig",
    "Point",
    "StoreConfig",
    "WorkloadConfig",
    "expand_points",
    "load_config",
    "parse_config",
    "parse_mapping",
]


def __getattr__(name: str) -> object:
    if name in _LOADER:
        return getattr(import_module("sim.config.loader"), name)
    raise AttributeError(f"module 'sim.config' has no attribute {name!r}")
