"""Things that run beside the load pipeline during a point: probes, the engine loop.

An add-on is built from the point's config (or not, when disabled), attached to
the environment before the run starts and detached after the last request; it
contributes summary columns and, optionally, extra per-row tables (``steps.csv``).
Keeping them behind this one interface lets ``run_point`` stay the same as the
set of instruments grows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sim.config.experiment import ExperimentConfig
    from sim.runtime.env import HybridEnvironment

__all__ = ["ADDON_FACTORIES", "AddOn", "build_addons"]


class AddOn(Protocol):
    def attach(self, env: HybridEnvironment) -> None:
        """Start threads/processes; called on the simulation thread before the run."""

    def detach(self) -> None:
        """Stop and join everything started by attach; must not raise."""

    def summary(self) -> dict[str, float]:
        """Summary columns this add-on contributes (names listed in sim.runtime.metrics)."""

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """Extra long-format tables: file stem -> rows (e.g. {"steps": [...]})."""


#: Factories in attach order; each returns an AddOn or None when disabled by the config.
ADDON_FACTORIES: list[Callable[[ExperimentConfig], AddOn | None]] = []


def _engine(cfg: ExperimentConfig) -> AddOn | None:
    """The engine step loop, imported only when a point builds its add-ons."""
    from sim.instruments.engine import engine_addon

    return engine_addon(cfg)


ADDON_FACTORIES.append(_engine)


def _probe(cfg: ExperimentConfig) -> AddOn | None:
    """The sentinel probe: stalls and the GIL-busy cross-check, when gil.probe."""
    from sim.instruments.probe import probe_addon

    return probe_addon(cfg)


ADDON_FACTORIES.append(_probe)


def _gc(cfg: ExperimentConfig) -> AddOn | None:
    """Every collection by thread and generation (gc.csv); attached last, after the
    engine's baseline, so it covers the load."""
    from sim.instruments.gc_meter import gc_addon

    return gc_addon(cfg)


ADDON_FACTORIES.append(_gc)


def _audit(cfg: ExperimentConfig) -> AddOn | None:
    """The py-spy GIL audit, when gil.audit is pyspy. Last: it attaches after every other
    add-on (after an engine-alone baseline) and detaches first, so that its window is the
    load's."""
    from sim.instruments.audit import audit_addon

    return audit_addon(cfg)


ADDON_FACTORIES.append(_audit)


def build_addons(cfg: ExperimentConfig) -> list[AddOn]:
    out = []
    for factory in ADDON_FACTORIES:
        addon = factory(cfg)
        if addon is not None:
            out.append(addon)
    return out
