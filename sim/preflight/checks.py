"""A config loaded and checked for running: the pre-flight checks in their order.

The loader (sim.config) validates what a config says; whether it can run here is
decided above it, because that takes the workload's plan and the store's memory
model (docs/design.md §2): every trace it names is read (sim.preflight.files), then
every point's memory and wall time are estimated from its planned load and refused
past ``limits`` (sim.preflight.budget). ``kvsim run``, ``validate``, ``search`` and
the API load configs through here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sim.config.experiment import ExperimentConfig, Point
from sim.config.loader import ParsedConfig, read_config, read_mapping
from sim.errors import ConfigError
from sim.preflight import budget
from sim.preflight.files import check_data_files
from sim.preflight.interpreter import check_interpreters
from sim.workload.plan import preview_workload

__all__ = ["check_budget", "check_config", "parse_checked", "parse_checked_mapping"]


def check_budget(parsed: ParsedConfig) -> None:
    """Refuse a point's memory or its wall time past ``limits`` (sim.preflight.budget)."""
    memo: dict[str, Any] = {}
    counts: list[int | budget.PlannedLoad] = []
    for p in parsed.points:
        try:
            counts.append(preview_workload(p.config, memo))
        except ConfigError:  # a replay that cannot be planned is the run's to report
            arrival = p.config.workload.arrival
            counts.append(getattr(arrival, "limit", None) or p.config.workload.requests)
    budget.check_points(str(parsed.source), parsed.points, counts)


def check_config(parsed: ParsedConfig) -> None:
    """The checks a loaded config must pass before it runs: its data files, its budget,
    the interpreter its points run under."""
    check_data_files(parsed)
    check_budget(parsed)
    check_interpreters(parsed)


def parse_checked(
    path: str | Path, overrides: Sequence[str] = (), plugins: Sequence[str] = ()
) -> tuple[ExperimentConfig, list[Point]]:
    """sim.config's ``parse_config`` followed by :func:`check_config`: one-line
    ConfigErrors for what the config says and for what it would take to run."""
    parsed = read_config(path, overrides, plugins)
    check_config(parsed)
    return parsed.config, parsed.points


def parse_checked_mapping(
    data: Mapping[str, Any],
    overrides: Sequence[str] = (),
    *,
    base_dir: str | Path | None = None,
    label: str = "<python>",
    plugins: Sequence[str] = (),
) -> tuple[ExperimentConfig, list[Point]]:
    """sim.config's ``parse_mapping`` followed by :func:`check_config`."""
    parsed = read_mapping(data, overrides, base_dir=base_dir, label=label, plugins=plugins)
    check_config(parsed)
    return parsed.config, parsed.points
