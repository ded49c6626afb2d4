"""Experiment configuration: YAML in, immutable validated objects out."""

from __future__ import annotations

from .engine import EngineConfig
from .experiment import ExperimentConfig, Point, expand_points
from .geometry import GeometryConfig
from .loader import ConfigError, load_config, load_points, parse_config
from .sections import ConnectorConfig, GilConfig, OutputConfig, StoreConfig
from .workload import WorkloadConfig

__all__ = [
    "ConfigError",
    "ConnectorConfig",
    "EngineConfig",
    "ExperimentConfig",
    "GeometryConfig",
    "GilConfig",
    "OutputConfig",
    "Point",
    "StoreConfig",
    "WorkloadConfig",
    "expand_points",
    "load_config",
    "load_points",
    "parse_config",
]
