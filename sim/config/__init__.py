"""Experiment configuration: YAML in, immutable validated objects out."""

from __future__ import annotations

from sim.config.engine import EngineConfig, HeapConfig
from sim.config.experiment import ExperimentConfig, Point, expand_points
from sim.config.geometry import GeometryConfig
from sim.config.loader import ConfigError, load_config, load_points, parse_config, parse_mapping
from sim.config.sections import ConnectorConfig, GilConfig, OutputConfig, StoreConfig
from sim.config.workload import WorkloadConfig

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
    "load_points",
    "parse_config",
    "parse_mapping",
]
