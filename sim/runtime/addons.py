"""Real mode's add-ons: the instruments a real point attaches to its HybridEnvironment.

The contract every add-on keeps, in both modes, is sim.point.addons.AddOn; this is
real mode's list of them, each factory importing its instrument only when a point
builds its add-ons (torch, py-spy and the GIL meters stay out of start-up).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sim.point.addons import AddOn

if TYPE_CHECKING:
    from sim.config.experiment import ExperimentConfig
    from sim.runtime.env import HybridEnvironment

__all__ = ["ADDON_FACTORIES", "build_addons"]


#: Factories in attach order; each returns an AddOn or None when disabled by the config.
ADDON_FACTORIES: list[Callable[[ExperimentConfig], AddOn[HybridEnvironment] | None]] = []


def _engine(cfg: ExperimentConfig) -> AddOn[HybridEnvironment] | None:
    """The engine step loop, imported only when a point builds its add-ons."""
    from sim.instruments.engine import engine_addon  # loads when a point builds its add-ons

    return engine_addon(cfg)


ADDON_FACTORIES.append(_engine)


def _probe(cfg: ExperimentConfig) -> AddOn[HybridEnvironment] | None:
    """The sentinel probe: stalls and the GIL-busy cross-check, when gil.probe."""
    from sim.instruments.probe import probe_addon  # loads when a point builds its add-ons

    return probe_addon(cfg)


ADDON_FACTORIES.append(_probe)


def _gc(cfg: ExperimentConfig) -> AddOn[HybridEnvironment] | None:
    """Every collection by thread and generation (gc.csv); attached last, after the
    engine's baseline, so it covers the load."""
    from sim.instruments.gc_meter import gc_addon  # loads when a point builds its add-ons

    return gc_addon(cfg)


ADDON_FACTORIES.append(_gc)


def _audit(cfg: ExperimentConfig) -> AddOn[HybridEnvironment] | None:
    """The py-spy GIL audit, when gil.audit is pyspy. Last: it attaches after every other
    add-on (after an engine-alone baseline) and detaches first, so that its window is the
    load's."""
    from sim.instruments.audit import audit_addon  # loads when a point builds its add-ons

    return audit_addon(cfg)


ADDON_FACTORIES.append(_audit)


def build_addons(cfg: ExperimentConfig) -> list[AddOn[HybridEnvironment]]:
    out = []
    for factory in ADDON_FACTORIES:
        addon = factory(cfg)
        if addon is not None:
            out.append(addon)
    return out
